-- Triage of violations (pitwatch serve): who acknowledged which violation, when, and
-- why. An append-only audit log kept apart from the violations: a row is never edited
-- or replaced (plain MergeTree), and a violation is never touched. `triage_id` is a
-- hash of the row's content; `ts`/`ts_ms` is when the person acted (the console's clock).
CREATE TABLE IF NOT EXISTS triage (
    triage_id     String,
    violation_id  String,
    action        String,
    who           String,
    note          String,
    ts            DateTime,
    ts_ms         UInt16
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (violation_id, ts, ts_ms, triage_id)
