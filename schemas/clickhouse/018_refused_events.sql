-- The quarantine of events the record refused yet took into its device's record
-- (`TableAuditor.refused`: a payload outside the contract's ranges, its envelope and
-- chain in order; one HIGH EVENT_REFUSED). Never evidence of play: never in `events`,
-- never applied to a round. Kept so a rebuild from the store (replay, reaudit,
-- investigate) feeds each back through `TableAuditor.refused` at its place (right
-- after its device's previous seq) and finds what the live audit found, its digest in
-- the device's chain. A row an event: `raw` its bytes as sent (hex of the Avro body
-- its digest is of), `writer` the hex CRC-64 of the writer schema they came under (a
-- lookup hint for a released schema), `reason` why its decoder refused it. A copy is
-- one row. Dead letters that are merely refused copies are not here. Only what
-- ClickHouse 18.16 and chDB both run.
CREATE TABLE IF NOT EXISTS refused_events (
    table_id   String,
    device_id  String,
    seq        UInt64,
    event_id   String,
    round_id   String,
    ts         DateTime,
    ts_ms      UInt16,
    writer     String,
    raw        String,
    reason     String
) ENGINE = ReplacingMergeTree()
ORDER BY (table_id, device_id, seq, event_id)
