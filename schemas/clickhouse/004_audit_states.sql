-- Where an audit run into the store left each casino table: the engine's snapshot of it
-- (`TableAuditor.export_state`, versioned JSON), so that the next batch of the table's
-- history continues exactly there: its open round, each device's seq, chain and
-- unsigned tail, the shoe's counts, the posted rules (pitwatch/store/history.py).
-- `pos` is the position (events.pos) the table's record clock stood at when the state
-- was taken, and `clock` each device's last seq there (a JSON object): the next run
-- trusts the state only while the stored events up to `pos` say the same. `closed` is
-- 1 when the books were closed after it (`pitwatch audit --final`: its open round
-- judged incomplete), and wins over the open state at the same position. `open_round`
-- is the round it left open ('' for none), open since `open_since_ms` (device time, ms
-- since the epoch, UTC).
CREATE TABLE IF NOT EXISTS audit_states (
    table_id       String,
    pos            UInt64,
    closed         UInt8,
    clock          String,
    open_round     String,
    open_since_ms  UInt64,
    state          String
) ENGINE = ReplacingMergeTree(closed)
ORDER BY (table_id, pos)
