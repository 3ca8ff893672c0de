"""The embedded store inserts columnar batches (Arrow, typed from the DDL): every value
comes back as it went in, whatever its column type, and nothing is left staged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pitwatch.store.arrow import arrow_table
from pitwatch.store.base import StoreError, column_types, columns, ddl_statements, to_columns
from pitwatch.store.embedded import EmbeddedStore

AWKWARD = "quote ' and \" backslash \\ newline \n tab \t unicode ♠♥ and {x:String}"


def _violation(i: int, **over: Any) -> dict[str, Any]:
    row = {
        "violation_id": f"v{i:04d}", "code": "DEALER_STOOD_LOW", "severity": "HIGH",
        "table_id": "NJ-BJ-01", "round_id": f"r{i}", "seat": 7, "hand": -1,
        "event_id": f"e{i}", "evidence": ["a", AWKWARD, ""], "citation": "N.J.A.C. 13:69F-2.3",
        "message": AWKWARD, "pack": "nj_blackjack", "pack_version": "1.2.0",
        "detected_at": 1_764_547_200 + i, "detected_ms": 999,
    }
    row.update(over)
    return row


ROUND = {"round_id": "r1", "table_id": "NJ-BJ-01", "jurisdiction": "NJ", "game": "blackjack",
         "pack": "nj_blackjack", "pack_version": "1.2.0", "dealer_id": "d♠", "seats": [1, 7],
         "events": 40, "wagered": 2**62, "paid": -5, "collected": 0, "returned": 0,
         "violations": 1, "complete": 1, "started": 2**32 - 1, "started_ms": 999,
         "ended": 0, "ended_ms": 0}


def test_a_batch_of_each_column_type_is_its_values_in_arrow() -> None:
    """Strings (non-ASCII), every int width at its limits, and arrays, empty or not."""
    rows = [ROUND, ROUND | {"round_id": "", "seats": [], "paid": -(2**63)}]
    t = arrow_table("rounds", rows)
    t.validate(full=True)
    assert t.to_pylist() == rows


@pytest.mark.parametrize("column, value", [
    ("seats", [256]), ("seats", 3), ("events", -1), ("events", 2**32), ("paid", 2**63),
    ("complete", True), ("dealer_id", b"d1"), ("dealer_id", None), ("dealer_id", "\ud800"),
    ("wagered", 1.0)])
def test_a_value_a_rounds_column_refuses_is_a_store_error_naming_it(
        column: str, value: Any) -> None:
    with pytest.raises(StoreError, match=rf"rounds\.{column} \("):
        arrow_table("rounds", [ROUND, ROUND | {column: value}])


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    s = EmbeddedStore(tmp_path / "data")
    s.setup()
    return s


def test_columns_are_the_ddl_in_order() -> None:
    assert columns("rounds")[:3] == ["round_id", "table_id", "jurisdiction"]
    assert dict(column_types("rounds"))["seats"] == "Array(UInt8)"
    assert dict(column_types("events"))["hand"] == "Int8"
    rows = [_violation(1), _violation(2)]
    cols = to_columns("violations", rows)
    assert cols[0] == ["v0001", "v0002"]
    assert len(cols) == len(columns("violations"))


def test_arrow_batch_is_typed_from_the_ddl() -> None:
    t = arrow_table("violations", [_violation(1)])
    types = {f.name: str(f.type) for f in t.schema}
    assert types["seat"] == "uint8" and types["hand"] == "int8"
    assert types["detected_at"] == "uint32" and types["evidence"] == "list<item: string>"


def test_values_come_back_as_they_went_in(store: EmbeddedStore, tmp_path: Path) -> None:
    rows = [_violation(i) for i in range(3)] + [_violation(3, hand=2, seat=0, evidence=[])]
    store.insert("violations", rows)
    got = store.query("SELECT * FROM violations FINAL ORDER BY violation_id")
    assert len(got) == 4
    for want, have in zip(rows, got, strict=True):
        assert have["message"] == AWKWARD
        assert have["evidence"] == want["evidence"]
        assert (have["seat"], have["hand"]) == (want["seat"], want["hand"])
        assert have["detected_ms"] == 999
    secs = store.query("SELECT toUInt32(detected_at) AS s FROM violations FINAL "
                       "ORDER BY violation_id")
    assert [r["s"] for r in secs] == [r["detected_at"] for r in rows]
    assert list((tmp_path / "data" / "staging").iterdir()) == []
    store.close()


def test_extreme_values_of_each_type(store: EmbeddedStore) -> None:
    rnd = {
        "round_id": "r", "table_id": "t", "jurisdiction": "NJ", "game": "BLACKJACK",
        "pack": "p", "pack_version": "1", "dealer_id": "d", "seats": [1, 7, 255],
        "events": 2**32 - 1, "wagered": -(2**63), "paid": 2**63 - 1, "collected": 0,
        "returned": 5, "violations": 0, "complete": 1, "started": 0, "started_ms": 0,
        "ended": 2**32 - 1, "ended_ms": 65535,
    }
    store.insert("rounds", [rnd])
    got = store.query("SELECT *, toUInt32(started) AS s0, toUInt32(ended) AS s1 "
                      "FROM rounds FINAL")[0]
    assert got["seats"] == [1, 7, 255]
    assert (int(got["events"]), int(got["wagered"]), int(got["paid"])) == \
        (2**32 - 1, -(2**63), 2**63 - 1)
    assert (got["s0"], got["s1"], got["ended_ms"]) == (0, 2**32 - 1, 65535)
    store.close()


def test_a_value_out_of_its_type_is_refused_not_wrapped(store: EmbeddedStore) -> None:
    with pytest.raises(StoreError, match=r"violations\.seat \(UInt8\)"):
        store.insert("violations", [_violation(1, seat=256)])
    assert store.query("SELECT count() AS n FROM violations")[0]["n"] in (0, "0")
    store.close()


def test_many_batches_of_one_table(store: EmbeddedStore) -> None:
    for b in range(3):
        store.insert("violations", [_violation(b * 1000 + i) for i in range(1000)])
    store.insert("violations", [_violation(5)])  # a repeat: replaced, not counted twice
    store.dedupe()
    n = store.query("SELECT count() AS n, uniqExact(violation_id) AS u FROM violations")[0]
    assert int(n["n"]) == int(n["u"]) == 3000
    store.close()


@pytest.mark.integration
def test_server_columnar_insert_round_trips() -> None:
    """The same rows through clickhouse-driver's columnar insert into the ClickHouse
    server (started by scripts/test.sh), read back as they went in."""
    import os
    import uuid

    from pitwatch.store.server import ServerStore

    db = "columnar_" + uuid.uuid4().hex[:8]
    s = ServerStore(port=int(os.environ.get("CLICKHOUSE_TCP_PORT", "19000")), database=db)
    try:
        s.setup()
        rows = [_violation(i) for i in range(3)] + [_violation(3, hand=2, seat=0, evidence=[])]
        s.insert("violations", rows)
        got = s.query("SELECT *, toUInt32(detected_at) AS sec FROM violations FINAL "
                      "ORDER BY violation_id")
        assert [g["message"] for g in got] == [AWKWARD] * 4
        assert [g["evidence"] for g in got] == [r["evidence"] for r in rows]
        assert [g["sec"] for g in got] == [r["detected_at"] for r in rows]
        assert [(g["seat"], g["hand"]) for g in got] == [(r["seat"], r["hand"]) for r in rows]
    finally:
        s.query(f"DROP DATABASE IF EXISTS {db}")
        s.close()


def test_event_values_are_the_events_columns_in_ddl_order() -> None:
    from pitwatch.events.jsonl import loads
    from pitwatch.store.columns import event_row, event_values

    ev = loads(b'{"type":"WagerPlaced","event_id":"e1","table_id":"NJ-BJ-01",'
               b'"device_id":"NJ-BJ-01-rfid","seq":3,"ts":1764547200123,"round_id":"r1",'
               b'"prev_digest":null,"seat":2,"hand":0,"kind":"MAIN","amount":2500}')
    row = event_row(ev, 7)
    assert tuple(row.values()) == event_values(ev, 7)
    assert list(row) == columns("events")
    assert (row["event_id"], row["table_id"], row["device_id"], row["seq"], row["ts"],
            row["ts_ms"], row["round_id"], row["type"], row["seat"], row["hand"],
            row["kind"], row["amount"], row["pos"]) == (
        "e1", "NJ-BJ-01", "NJ-BJ-01-rfid", 3, 1764547200, 123, "r1", "WagerPlaced", 2, 0,
        "MAIN", 2500, 7)
    assert row["body"] == '{"prev_digest":null,"seat":2,"hand":0,"kind":"MAIN","amount":2500}'
    assert len(row["writer"]) == 16


class _ColumnsOnly:
    """A store that takes every table's rows as columns, `events` too (as a server
    does: `events_insert` None); it keeps them as dicts."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def insert_columns(self, table: str, cols: list[list[Any]]) -> None:
        names = columns(table)
        self.rows.extend(dict(zip(names, r, strict=True)) for r in zip(*cols, strict=True))

    def events_insert(self) -> None:
        return None

    def sync(self) -> None:
        pass


def test_batch_writer_hands_the_same_rows_to_chdb_and_to_a_store_of_columns(
        store: EmbeddedStore) -> None:
    from pitwatch.store.batch import BatchWriter

    rows = [_violation(i) for i in range(7)]
    plain = _ColumnsOnly()
    for target in (store, plain):
        w = BatchWriter(target, batch_rows=3)  # type: ignore[arg-type]
        for r in rows:
            w.add("violations", r)
        w.flush()
        assert w.written["violations"] == 7
    assert plain.rows == rows
    got = store.query("SELECT * FROM violations FINAL ORDER BY violation_id")
    assert [g["violation_id"] for g in got] == [r["violation_id"] for r in rows]
    assert [g["evidence"] for g in got] == [r["evidence"] for r in rows]


def test_batch_writer_hands_events_written_in_c_or_as_columns_as_the_store_says(
        store: EmbeddedStore) -> None:
    from pitwatch.producers.simulate import Floor
    from pitwatch.store.batch import BatchWriter
    from pitwatch.store.columns import event_row
    from pitwatch.store.order import Positions

    evs = list(Floor(1, 2, seed=3).events())
    pos = Positions()
    at = [pos.of(e) for e in evs]
    plain = _ColumnsOnly()
    for target in (store, plain):
        w = BatchWriter(target, batch_rows=7)  # type: ignore[arg-type]
        for ev, p in zip(evs, at, strict=True):
            w.add_event(ev, p)
        w.flush()
        assert w.written["events"] == len(evs)
    want = [event_row(e, p) for e, p in zip(evs, at, strict=True)]
    assert plain.rows == want
    got = store.query("SELECT event_id, pos, body FROM events FINAL ORDER BY pos")
    assert [(g["event_id"], int(g["pos"]), g["body"]) for g in got] == \
        [(r["event_id"], r["pos"], r["body"]) for r in want]


def test_a_batch_with_a_value_its_column_refuses_names_the_column(store: EmbeddedStore) -> None:
    cols = to_columns("violations", [_violation(1)])
    cols[columns("violations").index("seat")] = [300]
    with pytest.raises(StoreError, match=r"violations\.seat \(UInt8\)"):
        store.insert_columns("violations", cols)


# --- the events batch built in C ------------------------------------------------------

def _python_events(events: list[Any], positions: list[int]) -> Any:
    from pitwatch.store.arrow import arrow_columns
    from pitwatch.store.columns import event_values

    rows = [event_values(e, p) for e, p in zip(events, positions, strict=True)]
    return arrow_columns("events", list(zip(*rows, strict=True)))


def test_the_c_events_batch_is_the_python_rows_for_every_payload_type() -> None:
    """A simulated floor with faults (every payload type, cards without seats, rounds
    without ids) and events written under another schema version: the Arrow table built
    from C's buffers equals the one built from `event_values` row by row."""
    from dataclasses import replace

    from pitwatch.producers.simulate import Floor
    from pitwatch.store import native
    from pitwatch.store.arrow import arrow_events
    from pitwatch.store.base import column_types

    assert column_types("events") == native.EVENT_COLUMNS  # else C is never used
    evs = list(Floor(3, 6, seed=4, inject=0.3).events())
    evs[5] = replace(evs[5], writer=bytes(range(8)))
    evs[6] = replace(evs[6], round_id=None)
    assert {type(e.payload).__name__ for e in evs} >= {"TableOpened", "Checkpoint",
                                                       "CardDealt", "WagerPlaced"}
    positions = [i * 1024 + i % 3 for i in range(len(evs))]
    raw = native.event_columns(evs, positions, "00" * 8, lambda e: b"{}")
    assert raw is not None
    got = arrow_events(evs, positions)
    got.validate(full=True)
    assert got.equals(_python_events(evs, positions))
    assert got.column("writer")[5].as_py() == bytes(range(8)).hex()


@pytest.mark.parametrize("change", [
    {"seq": -1}, {"seq": 2**64}, {"ts": -1}, {"ts": (2**32) * 1000}, {"seq": True},
    {"event_id": b"e1"}, {"round_id": 7}, {"writer": "not bytes"},
    {"payload_seat": 256}, {"payload_hand": 128}, {"payload_amount": 2**63},
])
def test_a_value_c_refuses_is_built_in_python_which_names_it(change: dict[str, Any]) -> None:
    """What a column's type cannot hold (or the row's code does not expect) is None from
    C, and the batch is built in Python: a StoreError naming the column where its type
    refuses the value, else the same table."""
    from dataclasses import replace

    from pitwatch.events.model import Event, WagerPlaced
    from pitwatch.store import native
    from pitwatch.store.arrow import arrow_events

    p = WagerPlaced(2, 0, "MAIN", 2500)
    fields = {k: v for k, v in change.items() if not k.startswith("payload_")}
    pay = {k[8:]: v for k, v in change.items() if k.startswith("payload_")}
    ev = replace(Event("e1", "T-1", "d-1", 3, 1764547200123, "r1", None, p), **fields)
    ev.payload = replace(p, **pay)
    assert native.event_columns([ev], [7], "00" * 8, lambda e: b"{}") is None
    try:
        want = _python_events([ev], [7])
    except (StoreError, AttributeError, TypeError) as e:
        with pytest.raises(type(e)):
            arrow_events([ev], [7])
        return
    assert arrow_events([ev], [7]).equals(want)


def test_an_error_writing_a_body_in_python_is_raised_from_the_c_batch() -> None:
    from pitwatch.events.model import Event, Rules, TableOpened
    from pitwatch.store import native

    ev = Event("e1", "T-1", "d-1", 3, 0, None, None, TableOpened("NJ", "BLACKJACK", Rules()))

    def refuse(e: Any) -> bytes:
        raise ValueError("no body")

    with pytest.raises(ValueError, match="no body"):
        native.event_columns([ev], [1], "00" * 8, refuse)


def test_the_record_clock_keeps_a_redelivered_events_position_until_it_leaves_the_window(
) -> None:
    """A redelivered event (its id seen among the table's last WINDOW) keeps the position
    it had; one older than that comes after the event the clock stands at, as a late
    copy does."""
    from pitwatch.events.model import Event, WagerPlaced
    from pitwatch.store.order import STRIDE, WINDOW, table_clock

    clock = table_clock()

    def ev(i: int) -> Event:
        return Event(f"e{i}", "T-1", "d-1", i, 1764547200000 + i, "r1", None,
                     WagerPlaced(1, 0, "MAIN", 500))

    for i in range(1, WINDOW + 2):
        assert clock.position(ev(i)) == i * STRIDE
    assert clock.position(ev(WINDOW)) == WINDOW * STRIDE  # still in the window
    assert clock.position(ev(1)) == (WINDOW + 1) * STRIDE + 1  # gone: a late copy


def test_building_batches_does_not_import_pandas() -> None:
    """pyarrow's `pa.array` imports pandas (47 MB of the audit's peak memory); the
    batches of every table, the events' in C and in Python, are built without it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pitwatch.producers.simulate import Floor\n"
        "from pitwatch.store.arrow import arrow_columns, arrow_events\n"
        "from pitwatch.store.base import TABLES, to_columns\n"
        "from pitwatch.store.columns import event_values\n"
        "from tests.unit.test_store_columnar import ROUND, _violation\n"
        "evs = list(Floor(1, 2, seed=3).events())\n"
        "arrow_events(evs, list(range(len(evs))))\n"
        "rows = [event_values(e, i) for i, e in enumerate(evs)]\n"
        "arrow_columns('events', list(zip(*rows)))\n"
        "arrow_columns('rounds', to_columns('rounds', [ROUND]))\n"
        "arrow_columns('violations', to_columns('violations', [_violation(1)]))\n"
        "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def _events_columns(n: int, body: str, first: int = 0) -> list[list[Any]]:
    """`n` rows of the events table as columns, event ids from `first` on, each with
    `body` for its body."""
    values: dict[str, Any] = {"table_id": "NJ-BJ-01", "device_id": "NJ-BJ-01-shoe",
                              "ts": 1_764_547_200, "ts_ms": 0, "round_id": "r1",
                              "type": "CardDealt", "seat": 0, "hand": -1, "kind": "",
                              "amount": 0, "body": body, "writer": "6ebdb5aab495a1e5"}
    return [[f"e{i:08d}" for i in range(first, first + n)] if c == "event_id"
            else list(range(1, n + 1)) if c in ("seq", "pos") else [values[c]] * n
            for c in columns("events")]


def test_an_inserts_part_is_compact_and_a_large_one_wide_with_strings_in_one_stream(
        store: EmbeddedStore) -> None:
    """Fewer files a part (embedded.TABLE_SETTINGS): an insert of the audit's size (12.5
    MB here, past chDB's own 10 MB for a Wide part) is one Compact part, a file for all
    columns; a part of 32 MiB and more is Wide, a String column without a file of its
    lengths beside it."""
    body = "x" * 480
    store.query("SYSTEM STOP MERGES events")  # the two parts stay as inserted
    store.insert_columns("events", _events_columns(25_000, body))
    store.sync()
    store.insert_columns("events", _events_columns(80_000, body, first=25_000))
    store.sync()
    parts = store.query("SELECT rows, part_type, path FROM system.parts "
                        "WHERE table = 'events' AND active ORDER BY rows")
    assert [(p["rows"], p["part_type"]) for p in parts] == [(25_000, "Compact"),
                                                            (80_000, "Wide")]
    files = {f.name for f in Path(parts[1]["path"]).iterdir()}
    assert {"body.bin", "event_id.bin"} <= files
    assert not any(".size." in f for f in files), sorted(files)
    assert store.query("SELECT count() AS n FROM events WHERE body = {b:String}",
                       {"b": body}) == [{"n": 105_000}]


def _granularity(store: EmbeddedStore, table: str) -> list[dict[str, Any]]:
    return store.query("SELECT name FROM system.tables WHERE database = currentDatabase() "
                       "AND name = {t:String} AND engine_full LIKE "
                       "'%index_granularity = 2048%'", {"t": table})


def test_a_new_stores_events_have_granules_of_2048_rows_and_an_older_store_keeps_its_own(
        store: EmbeddedStore, tmp_path: Path) -> None:
    """Merges hold a granule of every part they merge (embedded.CREATE_SETTINGS): a new
    store's `events` is made with granules of 2,048 rows, its other tables as the schema
    says. A store whose `events` was made before (8,192 rows a granule) opens, is set up
    again, and keeps it; its rows read the same."""
    assert _granularity(store, "events") == [{"name": "events"}]
    assert _granularity(store, "rounds") == []
    store.insert_columns("events", _events_columns(5_000, "{}"))
    assert store.query("SELECT count() AS n FROM events WHERE seq > 4000") == [{"n": 1000}]
    store.close()

    older = EmbeddedStore(tmp_path / "older")
    events = next(s for s in ddl_statements() if "TABLE IF NOT EXISTS events" in s)
    older.query(events)  # as a store made before the setting was
    older.setup()
    assert _granularity(older, "events") == []
    older.insert_columns("events", _events_columns(3, "{}"))
    assert older.query("SELECT count() AS n FROM events") == [{"n": 3}]
    older.close()


def test_dedupe_merges_events_only_where_the_tables_named_hold_a_row_twice(
        store: EmbeddedStore) -> None:
    """`dedupe(events_of)`: `events` is merged only if the events of the tables named
    hold a row twice (counted over those tables' rows alone); none named, it is left as
    it is; `dedupe()` looks at every table's. (With merges stopped, an OPTIMIZE is
    refused: that shows which calls merge.)"""
    twice = _events_columns(3, "{}")  # NJ-BJ-01's events, stored twice below
    other = _events_columns(2, "{}", first=10)
    other[columns("events").index("table_id")] = ["NJ-BJ-02"] * 2

    def plain() -> int:
        return int(store.query("SELECT count() AS n FROM events")[0]["n"])

    store.query("SYSTEM STOP MERGES events")
    for cols in (twice, twice, other):
        store.insert_columns("events", cols)
        store.sync()  # an insert each (one insert merges its own rows)
    store.dedupe(set())
    store.dedupe({"NJ-BJ-02"})  # it holds no row twice: nothing is merged
    assert plain() == 8
    with pytest.raises(StoreError, match="Cancelled merging"):
        store.dedupe({"NJ-BJ-01"})
    store.query("SYSTEM START MERGES events")
    store.dedupe({"NJ-BJ-01", "NJ-BJ-02"})
    assert plain() == 5

    store.query("SYSTEM STOP MERGES events")
    store.insert_columns("events", other)
    store.sync()
    assert plain() == 7
    with pytest.raises(StoreError, match="Cancelled merging"):
        store.dedupe()
    store.query("SYSTEM START MERGES events")
    store.dedupe()
    assert plain() == 5


def test_rows_written_an_event_at_a_time_are_the_batchs_and_a_refused_one_writes_nothing(
) -> None:
    """`EventRows`, which the audit's writer fills as each event comes: the rows of a
    simulated floor (every payload type) are what `event_columns` writes of the whole
    batch; an event C refuses (a seat past 255) is False and leaves no trace; `take`
    starts again."""
    from dataclasses import replace

    from pitwatch.events.model import Event, WagerPlaced
    from pitwatch.producers.simulate import Floor
    from pitwatch.store import native

    evs = list(Floor(3, 6, seed=4, inject=0.3).events())
    positions = [i * 1024 + i % 3 for i in range(len(evs))]
    rows = native.event_rows("00" * 8, lambda e: b"{}")
    assert rows is not None
    bad = replace(Event("e1", "T-1", "d-1", 3, 1764547200123, "r1", None,
                        WagerPlaced(2, 0, "MAIN", 2500)), payload=WagerPlaced(256, 0, "MAIN", 1))
    for i, (ev, pos) in enumerate(zip(evs, positions, strict=True)):
        assert rows.add(ev, pos)
        if i == 3:
            assert not rows.add(bad, 7)
    assert len(rows) == len(evs)
    assert rows.take() == native.event_columns(evs, positions, "00" * 8, lambda e: b"{}")
    assert len(rows) == 0
    assert rows.take() == native.event_columns([], [], "00" * 8, lambda e: b"{}")
    assert rows.add(evs[0], 1) and len(rows) == 1


def test_the_writer_stores_every_event_and_names_a_value_c_refuses(
        store: EmbeddedStore) -> None:
    """Through the audit's writer (`BatchWriter`, rows written in C as events come): every
    event lands, with its position, across batches; an event whose value its column
    refuses is a StoreError naming the column, as when a batch was built at once."""
    from dataclasses import replace

    from pitwatch.events.model import Event, WagerPlaced
    from pitwatch.store.batch import BatchWriter

    w = BatchWriter(store, 100)
    assert w.rows is not None  # else C is never used
    evs = [Event(f"e{i}", "T-1", "d-1", i + 1, 1764547200123 + i, "r1", None,
                 WagerPlaced(2, 0, "MAIN", 2500 + i)) for i in range(250)]
    for i, ev in enumerate(evs):
        w.add_event(ev, (i + 1) * 1024)
    w.flush()
    assert store.query("SELECT count() AS n, sum(amount) AS a, max(pos) AS p FROM events") == [
        {"n": 250, "a": sum(2500 + i for i in range(250)), "p": 250 * 1024}]
    w.add_event(replace(evs[0], event_id="bad", payload=WagerPlaced(256, 0, "MAIN", 1)), 1)
    with pytest.raises(StoreError, match=r"events\.seat \(UInt8\)"):
        w.flush()


def test_an_error_writing_a_body_in_python_is_raised_from_adding_the_event() -> None:
    from pitwatch.events.model import Event, Rules, TableOpened
    from pitwatch.store import native

    ev = Event("e1", "T-1", "d-1", 3, 0, None, None, TableOpened("NJ", "BLACKJACK", Rules()))

    def refuse(e: Any) -> bytes:
        raise ValueError("no body")

    rows = native.event_rows("00" * 8, refuse)
    assert rows is not None
    with pytest.raises(ValueError, match="no body"):
        rows.add(ev, 1)
    assert len(rows) == 0
