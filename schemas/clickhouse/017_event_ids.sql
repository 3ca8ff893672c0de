-- Index tables for the writers' and the audit's own reads of stored history
-- (pitwatch/store/lookup.py): an event found by its id (the first copy of an event
-- wins: pitwatch/store/first_copy.py; a writer resuming its table's record clock at a
-- stored event: pitwatch/store/order.py), and a device's event found by its seq (a
-- continued audit checks the store holds the same event there:
-- pitwatch/store/history.py). Filled by materialized views as events land, backfilled
-- once in a store made before them (`lookup.MIGRATIONS`, "lookups-3"). Only what
-- ClickHouse 18.16 and chDB both run.

-- A table's events by id, with the device time and position its row in `events` is
-- read by (every copy stored under an id: a copy with another device time is another
-- row of `events`).
CREATE TABLE IF NOT EXISTS event_ids (
    table_id   String,
    event_id   String,
    ts         DateTime,
    ts_ms      UInt16,
    pos        UInt64
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, event_id, ts, ts_ms, pos);

CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_mv TO event_ids AS
SELECT table_id, event_id, ts, ts_ms, pos
FROM events;

-- A table's events by device and seq.
CREATE TABLE IF NOT EXISTS device_seqs (
    table_id   String,
    device_id  String,
    seq        UInt64,
    pos        UInt64,
    event_id   String
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, device_id, seq, pos, event_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS device_seqs_mv TO device_seqs AS
SELECT table_id, device_id, seq, pos, event_id
FROM events
