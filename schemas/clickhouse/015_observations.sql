-- Game-protection observations (docs/analytics.md), one row per observation_id =
-- hash(table, seat session or dealer, code): reading the same record again upserts the
-- same rows. Written by `pitwatch protect --data DIR`. An observation is evidence to
-- weigh, never a violation: it has no severity. `p_value` and `likelihood_ratio` are
-- nan where the test gives the other (the JSON form's null); `seat` 0 and `dealer_id`,
-- `player_id`, `player_kind` '' where the observation has none; `inferred` 1: the seat
-- session was inferred from the wagers (no seat events). `details` is the JSON object
-- of the statistic's parts. Only what ClickHouse 18.16 and chDB both run.
CREATE TABLE IF NOT EXISTS observations (
    observation_id    String,
    code              String,
    scope             String,
    table_id          String,
    subject           String,
    seat              UInt8,
    dealer_id         String,
    statistic         String,
    value             Float64,
    p_value           Float64,
    likelihood_ratio  Float64,
    strength          Float64,
    rounds            UInt32,
    weight_rounds     Array(String),
    inferred          UInt8,
    player_id         String,
    player_kind       String,
    message           String,
    details           String
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, subject, observation_id)
