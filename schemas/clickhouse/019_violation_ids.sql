-- Violations by id and by time of detection (pitwatch/store/lookup.py): the console's
-- violation page and its "which of these does the store hold", the audit's "already
-- stored", and the feed's newest violations, read through these sort keys, then each violation's row through `violations`' own (table, round) in
-- the months named here, never by a scan of `violations`. Filled by materialized views
-- as violations land, backfilled once in a store made before them (`lookup.MIGRATIONS`,
-- "lookups-4"). Only what ClickHouse 18.16 and chDB both run.

-- A violation's table, round and detection time, by its id.
CREATE TABLE IF NOT EXISTS violation_ids (
    violation_id  String,
    table_id      String,
    round_id      String,
    detected_at   DateTime
) ENGINE = ReplacingMergeTree()
ORDER BY (violation_id, table_id, round_id, detected_at);

CREATE MATERIALIZED VIEW IF NOT EXISTS violation_ids_mv TO violation_ids AS
SELECT violation_id, table_id, round_id, detected_at
FROM violations;

-- Each second's violations by (table, round), in order of detection (device time): the
-- feed's and a search's newest violations read back in windows of time from the
-- newest, then their rows through `violations`' sort key (table, round).
CREATE TABLE IF NOT EXISTS violation_times (
    detected_at   DateTime,
    table_id      String,
    round_id      String
) ENGINE = ReplacingMergeTree()
ORDER BY (detected_at, table_id, round_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS violation_times_mv TO violation_times AS
SELECT detected_at, table_id, round_id
FROM violations
