-- Violations by id (pitwatch/store/lookup.py): the console's violation page and its
-- "which of these does the store hold", and the audit's "already stored", read through
-- this sort key, then each violation's row through `violations`' own (table, round) in
-- the months named here, never by a scan of `violations`. Filled by a materialized view
-- as violations land, backfilled once in a store made before it (`lookup.MIGRATIONS`,
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
FROM violations
