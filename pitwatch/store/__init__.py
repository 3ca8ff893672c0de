"""The store: one interface (`base.Store`), two back ends: chDB embedded (`embedded`)
and a ClickHouse server through clickhouse-driver (`server`). The same DDL
(`schemas/clickhouse`) and the same queries run on both."""
