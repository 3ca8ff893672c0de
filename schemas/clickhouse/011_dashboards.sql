-- Aggregates for the dashboards (Grafana, the console's floor board), filled by
-- materialized views as rows land. Sort keys start with the table and the time, and
-- partitions are by month, like the base tables. Redelivered or re-derived rows count
-- once: counts are exact-distinct states of the violation id, per-round rows are
-- ReplacingMergeTree on the round id (query them with FINAL), and last-event times are
-- max states. Only what ClickHouse 18.16 and chDB both run. A deployment on a newer
-- server (the compose image) may add LowCardinality(String) to table_id, severity, code,
-- dealer_id, jurisdiction and game, DateTime64(3) instead of the ms columns, and a TTL
-- on these aggregates (e.g. TTL hour + INTERVAL 400 DAY): none changes a query.
-- The views see rows inserted after they exist; a store filled before them is
-- backfilled with the INSERT ... SELECT in deploy/grafana/README.md.
-- Change an aggregate by adding a new one, never by adding to or retyping its columns:
-- chDB checks a view's SELECT even on CREATE ... IF NOT EXISTS, so a view that selects
-- a column its table lacks stops every store made before it from opening (`pitwatch
-- serve` rebuilds such an aggregate; the other commands would fail). Dropping a column
-- is safe: the old view goes on filling the old table until `serve` makes it again
-- (tests/unit/test_console_views.py).

-- Violations per table, hour, severity and code.
CREATE TABLE IF NOT EXISTS violations_hourly (
    table_id    String,
    hour        DateTime,
    severity    String,
    code        String,
    violations  AggregateFunction(uniqExact, String)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (table_id, hour, severity, code);

CREATE MATERIALIZED VIEW IF NOT EXISTS violations_hourly_mv TO violations_hourly AS
SELECT table_id, toStartOfHour(detected_at) AS hour, severity, code,
       uniqExactState(violation_id) AS violations
FROM violations
GROUP BY table_id, hour, severity, code;

-- One narrow row a round, by table and hour: the dealer, the money and the round's
-- violation count, for violations per dealer and money per table and hour.
CREATE TABLE IF NOT EXISTS rounds_hourly (
    table_id      String,
    hour          DateTime,
    round_id      String,
    dealer_id     String,
    jurisdiction  String,
    game          String,
    violations    UInt32,
    wagered       Int64,
    paid          Int64,
    collected     Int64,
    returned      Int64,
    complete      UInt8
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (table_id, hour, round_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS rounds_hourly_mv TO rounds_hourly AS
SELECT table_id, toStartOfHour(started) AS hour, round_id, dealer_id, jurisdiction, game,
       violations, wagered, paid, collected, returned, complete
FROM rounds;

-- Each table's last event (device time in ms) and the round it belonged to: the floor
-- board's open round and silent tables, and Grafana's silent-table alert. Its states
-- stay the same size however long a table runs. (Until 2026-12-03 it also kept a
-- `uniqExact` of every event id a table and month, which nothing showed: a month of a
-- busy table is a million ids, held whole by every merge of that row and by every
-- floor-board query, and it was a sixth of chDB's CPU inserting an audit.)
CREATE TABLE IF NOT EXISTS table_activity (
    table_id    String,
    month       Date,
    last_ms     AggregateFunction(max, UInt64),
    last_round  AggregateFunction(argMax, String, UInt64)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (table_id, month);

CREATE MATERIALIZED VIEW IF NOT EXISTS table_activity_mv TO table_activity AS
SELECT table_id, toStartOfMonth(ts) AS month,
       maxState(toUInt64(ts) * 1000 + ts_ms) AS last_ms,
       argMaxState(round_id, toUInt64(ts) * 1000 + ts_ms) AS last_round
FROM events
GROUP BY table_id, month;

-- What each table's last TableOpened posted: the floor board's game and jurisdiction,
-- without reading the events. The view reads only the TableOpened events (a table and
-- month with none has no row, and its game and jurisdiction are '' as before): it then
-- parses no other event's body, and an insert without one makes no part here. chDB's
-- CPU inserting 1.08M events: 12.5-13.5 s with the WHERE, 13.4-14.1 s without it.
CREATE TABLE IF NOT EXISTS table_posted (
    table_id      String,
    month         Date,
    jurisdiction  AggregateFunction(argMaxIf, String, UInt64, UInt8),
    game          AggregateFunction(argMaxIf, String, UInt64, UInt8)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (table_id, month);

CREATE MATERIALIZED VIEW IF NOT EXISTS table_posted_mv TO table_posted AS
SELECT table_id, toStartOfMonth(ts) AS month,
       argMaxIfState(visitParamExtractString(body, 'jurisdiction'),
                     toUInt64(ts) * 1000 + ts_ms, type = 'TableOpened') AS jurisdiction,
       argMaxIfState(visitParamExtractString(body, 'game'),
                     toUInt64(ts) * 1000 + ts_ms, type = 'TableOpened') AS game
FROM events
WHERE type = 'TableOpened'
GROUP BY table_id, month
