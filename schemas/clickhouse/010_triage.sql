-- Triage of violations (pitwatch serve): every change a person made to a finding's
-- handling, one row a change. An append-only record kept apart from the violations: a
-- row is never edited or replaced (plain MergeTree), and a violation is never touched.
-- A finding's state is its newest row; each row also holds the state it replaced
-- (prev_status, prev_assignee), the logged-in user and role who made it, and when
-- (`ts`/`ts_ms`, the console's clock, UTC). status: new, acknowledged, investigating,
-- escalated, closed; a closed finding's disposition: confirmed (with `amount`, the
-- money involved in cents), false_alarm (the reason in `note`) or referred (to the
-- regulator). A note or an assignment alone keeps the status. `change_id` is a hash of
-- the row's content. (A store whose `triage` has the earlier columns: `pitwatch serve`
-- renames it triage_v1 and copies its acknowledgements in.)
CREATE TABLE IF NOT EXISTS triage (
    change_id      String,
    violation_id   String,
    action         String,
    status         String,
    prev_status    String,
    assignee       String,
    prev_assignee  String,
    disposition    String,
    amount         Int64,
    note           String,
    who            String,
    role           String,
    ts             DateTime,
    ts_ms          UInt16
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(ts)
ORDER BY (violation_id, ts, ts_ms, change_id)
