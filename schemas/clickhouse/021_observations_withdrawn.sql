-- An observation withdrawn (docs/analytics.md, "Streaming"): 1 on the row the worker
-- publishes when a later publication of the subject no longer gives the code, under the
-- same observation_id, so it replaces the flagged row; every reader leaves withdrawn
-- rows out. A column added to a table of an earlier file: a new store gets it in the
-- table's CREATE (`base.ddl_statements`), an older one by ALTER when it lacks it
-- (`lookup.add_columns`; ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS).
ALTER TABLE observations ADD COLUMN withdrawn UInt8 DEFAULT 0
