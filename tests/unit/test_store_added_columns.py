"""A column a later file of schemas/clickhouse adds to a table
(021_observations_withdrawn.sql): a new store has it from the table's CREATE, and a store
made before it gets it at its next setup, once, its rows kept (as not withdrawn)."""

from __future__ import annotations

from pathlib import Path

from pitwatch.store.base import added_columns, column_names, ddl_statements
from pitwatch.store.embedded import EmbeddedStore, _created
from pitwatch.store.lookup import add_columns


def test_the_withdrawn_column_is_in_a_new_store_and_added_to_an_older_one(
        tmp_path: Path) -> None:
    assert ("observations", "withdrawn", "UInt8 DEFAULT 0") in added_columns()
    assert column_names("observations")[-1] == "withdrawn"
    assert not any(s.startswith("ALTER") for s in ddl_statements())
    store = EmbeddedStore(tmp_path / "data")
    for stmt in ddl_statements():  # the store as made before the column
        if "withdrawn" in stmt:
            stmt = stmt.replace(",\n    withdrawn UInt8 DEFAULT 0", "")
            assert "withdrawn" not in stmt
        store.query(_created(stmt))
    store.query("INSERT INTO observations (observation_id, code, table_id) "
                "SELECT 'a', 'X', 'T'")
    store.setup()
    rows = store.query("SELECT observation_id, withdrawn FROM observations")
    assert [(r["observation_id"], int(r["withdrawn"])) for r in rows] == [("a", 0)]
    store.setup()  # the second time, nothing to add
    assert add_columns(store) == []
    store.close()
