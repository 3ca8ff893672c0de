-- The store on a ClickHouse cluster (pitwatch.store.cluster): every table of
-- schemas/clickhouse/*.sql becomes two, made ON CLUSTER, and every materialized view
-- moves onto the shards. {db}, {cluster}, {name}, ... are filled in from the one-server
-- DDL, which stays the only list of columns, engines and sort keys. {{shard}} and
-- {{replica}} are each server's own macros. Only what ClickHouse 18.16 runs.

-- local: one shard's rows, the same on each of its replicas (ZooKeeper keeps the
-- replication log under the table's path).
CREATE TABLE IF NOT EXISTS {db}.{name}_local ON CLUSTER {cluster} ({columns})
ENGINE = Replicated{engine}('/clickhouse/tables/{{shard}}/{db}/{name}', '{{replica}}'{args})
{clauses};

-- distributed: the name every query and insert uses. Rows go to a shard by their
-- casino table (or, for a table without one, by the first column of its sort key), so
-- one table's replacing merges and FINAL stay on one shard.
CREATE TABLE IF NOT EXISTS {db}.{name} ON CLUSTER {cluster} AS {db}.{name}_local
ENGINE = Distributed({cluster}, {db}, {name}_local, cityHash64({shard_key}));

-- view: a materialized view reads its shard's local rows as they land and writes its
-- index table's local rows on the same shard.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{name} ON CLUSTER {cluster}
TO {db}.{target}_local AS {select}
