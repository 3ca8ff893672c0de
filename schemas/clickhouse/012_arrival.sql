-- The processing clock: when rows ARRIVED in the store, stamped by the store's own clock
-- (now() at insert), never the devices' time. The console's silent tables and
-- "violations today", and Grafana's alert rules, read these, so a device clock that is
-- days behind or ahead (or a finding that lands late) changes nothing. Only what
-- ClickHouse 18.16 and chDB both run. They are filled as rows land and never backfilled
-- (a store's earlier rows have no arrival time: the console says so).

-- Each table's newest event's arrival (the store's clock, seconds), a row a table and day.
CREATE TABLE IF NOT EXISTS table_arrival (
    table_id  String,
    day       Date,
    arrived   AggregateFunction(max, DateTime)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (table_id, day);

CREATE MATERIALIZED VIEW IF NOT EXISTS table_arrival_mv TO table_arrival AS
SELECT table_id, toDate(now()) AS day, maxState(now()) AS arrived
FROM events
GROUP BY table_id, day;

-- When the worker (or an audit) found each violation: its first arrival in the store.
-- A violation redelivered later keeps its first time (min).
CREATE TABLE IF NOT EXISTS violations_found (
    table_id      String,
    violation_id  String,
    severity      String,
    code          String,
    month         Date,
    found         AggregateFunction(min, DateTime)
) ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(month)
ORDER BY (table_id, violation_id, severity, code, month);

CREATE MATERIALIZED VIEW IF NOT EXISTS violations_found_mv TO violations_found AS
SELECT table_id, violation_id, severity, code, toStartOfMonth(now()) AS month,
       minState(now()) AS found
FROM violations
GROUP BY table_id, violation_id, severity, code, month
