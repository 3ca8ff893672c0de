-- Each casino table's span of time, one row a table however long its history
-- (pitwatch/store/lookup.py): where a read back in windows of time starts and where it
-- stops (the newest and the oldest), and how many rows lie between (an estimate of
-- how wide the first window must be for a page); and what the floor board shows of a
-- table (its last event, what it posted, when its rows last arrived) in a row a table,
-- not one a table and month or day. A first page of the console (the
-- feed, a table's latest rounds) so costs a fixed number of store round trips, never
-- one a window back to 1970. The counts are of rows written: a row written again (a
-- redelivery, a re-run) counts twice, which only narrows a first window (the read then
-- widens it). Filled by materialized views as rows land, backfilled once in a store
-- made before them (`lookup.MIGRATIONS`, "lookups-6"). Only what ClickHouse 18.16 and
-- chDB both run.

-- A table's events: its first and last device time (ms), and the round of its last.
CREATE TABLE IF NOT EXISTS table_span (
    table_id    String,
    first_ms    AggregateFunction(min, UInt64),
    last_ms     AggregateFunction(max, UInt64),
    last_round  AggregateFunction(argMax, String, UInt64)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS table_span_mv TO table_span AS
SELECT table_id, minState(toUInt64(ts) * 1000 + ts_ms) AS first_ms,
       maxState(toUInt64(ts) * 1000 + ts_ms) AS last_ms,
       argMaxState(round_id, toUInt64(ts) * 1000 + ts_ms) AS last_round
FROM events
GROUP BY table_id;

-- A table's round summaries: the first and last start, and how many were written.
CREATE TABLE IF NOT EXISTS round_start_span (
    table_id  String,
    first     AggregateFunction(min, DateTime),
    last      AggregateFunction(max, DateTime),
    n         AggregateFunction(count)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS round_start_span_mv TO round_start_span AS
SELECT table_id, minState(started) AS first, maxState(started) AS last, countState() AS n
FROM rounds
GROUP BY table_id;

-- A table's violations: the first and last detection (device time), and how many were
-- written.
CREATE TABLE IF NOT EXISTS violation_span (
    table_id  String,
    first     AggregateFunction(min, DateTime),
    last      AggregateFunction(max, DateTime),
    n         AggregateFunction(count)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS violation_span_mv TO violation_span AS
SELECT table_id, minState(detected_at) AS first, maxState(detected_at) AS last,
       countState() AS n
FROM violations
GROUP BY table_id;

-- What each table's last TableOpened posted (its game and jurisdiction), a row a table:
-- `table_posted` without its months. Reads only the TableOpened events, as it does.
CREATE TABLE IF NOT EXISTS table_opened (
    table_id      String,
    jurisdiction  AggregateFunction(argMaxIf, String, UInt64, UInt8),
    game          AggregateFunction(argMaxIf, String, UInt64, UInt8)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS table_opened_mv TO table_opened AS
SELECT table_id,
       argMaxIfState(visitParamExtractString(body, 'jurisdiction'),
                     toUInt64(ts) * 1000 + ts_ms, type = 'TableOpened') AS jurisdiction,
       argMaxIfState(visitParamExtractString(body, 'game'),
                     toUInt64(ts) * 1000 + ts_ms, type = 'TableOpened') AS game
FROM events
WHERE type = 'TableOpened'
GROUP BY table_id;

-- Each table's newest event's arrival (the store's clock), a row a table: `table_arrival`
-- without its days. Filled as rows land and never backfilled (an arrival time is the
-- store's clock at insert): a table whose rows all predate it is read from
-- `table_arrival`, by its sort key (table, day).
CREATE TABLE IF NOT EXISTS table_arrived (
    table_id  String,
    arrived   AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree()
ORDER BY table_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS table_arrived_mv TO table_arrived AS
SELECT table_id, maxState(now()) AS arrived
FROM events
GROUP BY table_id
