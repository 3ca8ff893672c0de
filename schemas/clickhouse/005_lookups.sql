-- Index tables: every lookup replay, investigate, reaudit and the console make finds its
-- rows through a sort key (pitwatch/store/lookup.py), never by scanning `events`,
-- `rounds` or `violations`, so that it reads as many rows with a year of history as
-- with a day. Each is filled by a materialized view as its base table's rows land, and
-- holds the same answer however often a row is written again (a redelivery, a re-run):
-- ReplacingMergeTree on the whole row's identity, or min/max states. A store made
-- before them is filled from its base tables once, when it is next set up
-- (`pitwatch.store.lookup.migrate`, recorded in `store_migrations`). Only what
-- ClickHouse 18.16 and chDB both run.

-- Each table's events in its order of record: position, then event id, with what a
-- lookup needs to find the event's row in `events` through its own sort key (table,
-- device time): a stretch of positions becomes a stretch of device time.
CREATE TABLE IF NOT EXISTS event_positions (
    table_id   String,
    pos        UInt64,
    event_id   String,
    device_id  String,
    seq        UInt64,
    type       String,
    ts         DateTime,
    ts_ms      UInt16
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, pos, event_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS event_positions_mv TO event_positions AS
SELECT table_id, pos, event_id, device_id, seq, type, ts, ts_ms
FROM events;

-- The events that set a table's context, by kind: TableOpened (the posted rules),
-- ShoeLoaded (the shoe's counts start) and Checkpoint (a signing device's chain).
CREATE TABLE IF NOT EXISTS event_marks (
    table_id   String,
    type       String,
    pos        UInt64,
    event_id   String,
    device_id  String
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, type, pos, event_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS event_marks_mv TO event_marks AS
SELECT table_id, type, pos, event_id, device_id
FROM events
WHERE type IN ('TableOpened', 'ShoeLoaded', 'Checkpoint');

-- Each device of a table and its first and last positions: the devices a context needs
-- a last event of, and where the table's record ends.
CREATE TABLE IF NOT EXISTS table_devices (
    table_id   String,
    device_id  String,
    first      AggregateFunction(min, UInt64),
    last       AggregateFunction(max, UInt64)
) ENGINE = AggregatingMergeTree()
ORDER BY (table_id, device_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS table_devices_mv TO table_devices AS
SELECT table_id, device_id, minState(pos) AS first, maxState(pos) AS last
FROM events
GROUP BY table_id, device_id;

-- A round's table, its first and last positions and its device time span, from its
-- events (a round not closed yet has no `rounds` row, and is found here too).
CREATE TABLE IF NOT EXISTS round_index (
    round_id  String,
    table_id  String,
    first     AggregateFunction(min, UInt64),
    last      AggregateFunction(max, UInt64),
    began     AggregateFunction(min, DateTime),
    ended     AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree()
ORDER BY (round_id, table_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS round_index_mv TO round_index AS
SELECT round_id, table_id, minState(pos) AS first, maxState(pos) AS last,
       minState(ts) AS began, maxState(ts) AS ended
FROM events
WHERE round_id != ''
GROUP BY round_id, table_id;

-- Rounds by table and start (an investigation's table and hours), and by dealer.
CREATE TABLE IF NOT EXISTS round_starts (
    table_id    String,
    started     DateTime,
    started_ms  UInt16,
    round_id    String,
    dealer_id   String
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, started, started_ms, round_id, dealer_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS round_starts_mv TO round_starts AS
SELECT table_id, started, started_ms, round_id, dealer_id
FROM rounds;

CREATE TABLE IF NOT EXISTS dealer_rounds (
    dealer_id   String,
    started     DateTime,
    started_ms  UInt16,
    table_id    String,
    round_id    String
) ENGINE = ReplacingMergeTree()
ORDER BY (dealer_id, started, started_ms, table_id, round_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS dealer_rounds_mv TO dealer_rounds AS
SELECT dealer_id, started, started_ms, table_id, round_id
FROM rounds;

-- Violations by severity and code (a code alone is looked up under each severity).
CREATE TABLE IF NOT EXISTS violation_codes (
    severity      String,
    code          String,
    table_id      String,
    round_id      String,
    violation_id  String
) ENGINE = ReplacingMergeTree()
ORDER BY (severity, code, table_id, round_id, violation_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS violation_codes_mv TO violation_codes AS
SELECT severity, code, table_id, round_id, violation_id
FROM violations;

-- Backfills done: one row a name (`pitwatch.store.lookup.MIGRATIONS`).
CREATE TABLE IF NOT EXISTS store_migrations (
    name  String,
    done  DateTime
) ENGINE = ReplacingMergeTree()
ORDER BY name;

-- Each round's violations and when each was detected, by table and round, in no
-- partition: `violations` is partitioned by month of detection, so a round's lookup
-- there is given the months to read from here (its sort key has no time).
CREATE TABLE IF NOT EXISTS round_violations (
    table_id      String,
    round_id      String,
    violation_id  String,
    detected_at   DateTime
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, round_id, violation_id, detected_at);

CREATE MATERIALIZED VIEW IF NOT EXISTS round_violations_mv TO round_violations AS
SELECT table_id, round_id, violation_id, detected_at
FROM violations
