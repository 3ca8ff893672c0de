-- The casino table of a triage change's violation, and of a `pinned_open` row. On a
-- cluster both tables are sharded by it (pitwatch.store.cluster: `table_id` first), as
-- `violations` is, so a CRITICAL's row of sign 1, the changes of it, and the row of
-- sign -1 its first change adds (the view reads its own shard's `pinned_open`) are all
-- on the violation's shard, and cancel when that shard merges. The console writes it
-- (console/data.py `apply`); '' in a row written before it. Columns added to tables of
-- earlier files: a new store has them in the CREATE, an older one gets them by ALTER
-- (`lookup.add_columns`).
ALTER TABLE triage ADD COLUMN table_id String DEFAULT '';

ALTER TABLE pinned_open ADD COLUMN table_id String DEFAULT ''
