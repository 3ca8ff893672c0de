-- Each table's latest stored audit state, as one row of states a table however many
-- audit runs stored one (pitwatch/store/history.py): the tables an audit left with the
-- books open, the rounds it left open, and where each table's audit stands, read
-- through this sort key (the table), never by reading every state of `audit_states`.
-- The latest is the state at the largest position, a closed one winning over an open
-- one at the same position (`audit_states`' version): the argMax of each column by
-- `pos * 2 + closed`. Filled by a materialized view as states land, backfilled once in
-- a store made before it (`lookup.MIGRATIONS`, "lookups-5"). Only what ClickHouse 18.16
-- and chDB both run.
CREATE TABLE IF NOT EXISTS audit_latest (
    table_id       String,
    last_pos       AggregateFunction(max, UInt64),
    last_closed    AggregateFunction(argMax, UInt8, UInt64),
    last_round     AggregateFunction(argMax, String, UInt64),
    last_since_ms  AggregateFunction(argMax, UInt64, UInt64)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS audit_latest_mv TO audit_latest AS
SELECT table_id, maxState(pos) AS last_pos,
       argMaxState(closed, pos * 2 + closed) AS last_closed,
       argMaxState(open_round, pos * 2 + closed) AS last_round,
       argMaxState(open_since_ms, pos * 2 + closed) AS last_since_ms
FROM audit_states
GROUP BY table_id
