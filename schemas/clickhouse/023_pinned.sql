-- The CRITICAL violations no triage change has taken out yet: what the feed's first
-- screen pins (console/data.py `pinned`), read from here, never from every CRITICAL of
-- the store's history. A CRITICAL stored adds a row of sign 1; the first triage change of
-- one still in adds a row of sign -1, and the two cancel when ClickHouse merges them
-- (CollapsingMergeTree), so once merged the table holds the unhandled CRITICALs alone and
-- a read of it does not grow with history. A violation stored again in one insert
-- (a redelivery) adds one row (DISTINCT); one stored again later, or a change racing
-- another, may leave a row of sign 1 for a handled violation, which the next triage change
-- of it cancels: a read therefore takes those whose signs sum above 0 and asks `triage`,
-- by its sort key (the violation id), which of them have a change. A change of a
-- violation that is not in (not CRITICAL, or handled already) adds nothing. Filled by
-- materialized views as rows land (the triage view reads this table, small once merged,
-- to know what is in), backfilled once in a store made before it (`lookup.MIGRATIONS`,
-- "lookups-7": the violations first, then the triage). GLOBAL IN: on a cluster the backfill
-- reads two Distributed tables, whose plain IN ClickHouse refuses (distributed_product_mode);
-- on one server it is IN. Only what ClickHouse 18.16 and chDB both run.
CREATE TABLE IF NOT EXISTS pinned_open (
    violation_id  String,
    sign          Int8
) ENGINE = CollapsingMergeTree(sign)
ORDER BY violation_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS pinned_open_mv TO pinned_open AS
SELECT DISTINCT violation_id, toInt8(1) AS sign, table_id
FROM violations
WHERE severity = 'CRITICAL';

CREATE MATERIALIZED VIEW IF NOT EXISTS pinned_handled_mv TO pinned_open AS
SELECT DISTINCT violation_id, toInt8(-1) AS sign, table_id
FROM triage
WHERE violation_id GLOBAL IN (SELECT violation_id FROM pinned_open GROUP BY violation_id
                              HAVING sum(sign) > 0)
