-- Every device event as received, one row per event_id. The row holds the event's JSON
-- Lines form, which is lossless: its columns the envelope (type, event_id, table_id,
-- device_id, seq, ts with ts_ms, round_id: '' for none), and `body` the rest, the
-- prev_digest and the payload's fields, as a JSON object in that order. Replay rebuilds
-- the typed event, and its canonical Avro bytes and digest, from them
-- (pitwatch/store/rows.py: `stored_event`). A row written before 2026-12-04 has the
-- whole JSON Lines form as its body, and reads back the same. `pos` is its place in the
-- table's order of record, the same from every writer (pitwatch/store/order.py: the
-- table's record clock, the sum of its devices' last seqs, times 1024, plus the count
-- of events since that moved no device forward). `writer` is the hex fingerprint of the
-- Avro schema version its device wrote. Sorted by table and device time (what
-- dashboards and investigations select by); event_id last keeps one row per event (the
-- same event always has the same ts).
CREATE TABLE IF NOT EXISTS events (
    event_id     String,
    table_id     String,
    device_id    String,
    seq          UInt64,
    ts           DateTime,
    ts_ms        UInt16,
    round_id     String,
    type         String,
    seat         UInt8,
    hand         Int8,
    kind         String,
    amount       Int64,
    pos          UInt64,
    body         String,
    writer       String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (table_id, ts, ts_ms, event_id)
