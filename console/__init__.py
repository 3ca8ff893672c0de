"""The surveillance console (`pitwatch serve`): a live alert feed pushed from the alerts
topic, triage kept as an audit log, the floor board, and table and round views, over the
embedded store or a ClickHouse server. A stage: it imports the core, never the reverse."""
