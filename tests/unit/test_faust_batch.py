"""The batch path from Faust's consumer to the audit (processors/faust_batch.py): each
fetch's records of the events topic reach the handler per partition, in order, once;
the group's commit moves past what the handler handled and no further, and not at all
for a fetch a rebalance overtook."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple

from faust.streams import current_event
from faust.types import TP

from pitwatch.processors.faust_batch import BatchApp, BatchConsumer, in_hand


class Rec(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def recs(topic: str, partition: int, offsets: range) -> list[Rec]:
    return [Rec(topic, partition, o, b"k", b"v%d" % o) for o in offsets]


class Harness:
    """A BatchApp (never connected) whose handler records what it was given and
    returns, per partition, the range it was given (or what `handled` says)."""

    def __init__(self) -> None:
        self.app = BatchApp("t-batch", broker="kafka://127.0.0.1:1", store="memory://",
                            web_enabled=False, key_serializer="raw", value_serializer="raw")
        self.events = self.app.topic("ev", key_type=bytes, value_type=bytes)
        self.seen: list[dict[TP, list[int]]] = []
        self.handled: dict[TP, tuple[int, int]] | None = None
        self.during: Any = None  # called inside the handler (a rebalance, say)
        self.app.batch_consume(self.events, self.handler)
        self.consumer: BatchConsumer = self.app.consumer

    async def handler(self, batches: Mapping[TP, Sequence[Any]]) -> dict[TP, tuple[int, int]]:
        self.seen.append({tp: [r.offset for r in rs] for tp, rs in batches.items()})
        if self.during is not None:
            self.during()
        if self.handled is not None:
            return self.handled
        return {tp: (rs[0].offset, rs[-1].offset) for tp, rs in batches.items()}

    async def setup(self) -> None:
        await self.app.topics._update_indices()  # the conductor's subscription (acks on)

    def commit_offset(self, tp: TP) -> int | None:
        """Where Faust's next commit of `tp` would go (its own computation)."""
        return self.consumer._new_offset(tp)


def harnessed(test: Callable[[Harness], Awaitable[None]]) -> Callable[[], None]:
    """A test whose body is given a set-up Harness (run to completion here: the
    project's tests carry no asyncio plugin)."""
    def run() -> None:
        async def go() -> None:
            h = Harness()
            await h.setup()
            await test(h)
        asyncio.run(go())
    run.__name__, run.__doc__ = test.__name__, test.__doc__
    return run


@harnessed
async def test_each_partitions_records_reach_the_handler_in_order_and_the_commit_follows(
        h: Harness) -> None:
    p0, p1 = TP("ev", 0), TP("ev", 1)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 5)),
                                     p1: recs("ev", 1, range(10, 13))}, None)
    assert h.seen == [{p0: [0, 1, 2, 3, 4], p1: [10, 11, 12]}]
    assert h.commit_offset(p0) == 5
    assert h.consumer._read_offset[p1] == 12


@harnessed
async def test_records_before_the_read_offset_are_not_handed_again(h: Harness) -> None:
    p0 = TP("ev", 0)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 4))}, None)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(2, 7))}, None)
    assert h.seen[1] == {p0: [3, 4, 5, 6]}  # Faust's rule: from its read offset on


@harnessed
async def test_the_commit_moves_past_read_backs_the_handler_reports(h: Harness) -> None:
    p0 = TP("ev", 0)
    h.handled = {p0: (0, 9)}  # 0..4 read back from the partition before 5..9
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(5, 10))}, None)
    assert h.commit_offset(p0) == 10


@harnessed
async def test_the_commit_stops_at_a_hole_the_handler_did_not_handle(h: Harness) -> None:
    p0 = TP("ev", 0)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 3))}, None)
    h.handled = {p0: (6, 8)}  # 3..5 never handled
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(6, 9))}, None)
    assert h.commit_offset(p0) == 3
    h.consumer._committed_offset[p0] = 3  # what the commit records
    assert h.commit_offset(p0) is None  # and nothing past the hole, ever


@harnessed
async def test_a_fetch_a_rebalance_overtook_is_not_committed(h: Harness) -> None:
    p0 = TP("ev", 0)
    h.during = lambda: setattr(h.app, "consumer_generation_id",
                               h.app.consumer_generation_id + 1)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 5))}, None)
    assert h.seen == [{p0: [0, 1, 2, 3, 4]}]
    assert h.commit_offset(p0) is None
    assert h.consumer._read_offset[p0] is None  # Faust's seek decides where to go on


@harnessed
async def test_records_fetched_while_the_flow_is_stopped_are_dropped(h: Harness) -> None:
    p0 = TP("ev", 0)
    h.consumer.stop_flow()
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 5))}, None)
    assert h.seen == []
    assert h.commit_offset(p0) is None


@harnessed
async def test_paused_partitions_are_not_handed(h: Harness) -> None:
    p0, p1 = TP("ev", 0), TP("ev", 1)
    await h.consumer.deliver(h.app, {p0: recs("ev", 0, range(0, 2)),
                                     p1: recs("ev", 1, range(0, 2))}, {p1})
    assert h.seen == [{p1: [0, 1]}]


def test_a_write_in_hand_takes_the_partition_named() -> None:
    assert current_event() is None
    with in_hand("ev", 3, 41):
        event = current_event()
        assert event is not None
        assert (event.message.topic, event.message.partition) == ("ev", 3)
        assert event.message.tp == TP("ev", 3)
    assert current_event() is None


#: Faust's and aiokafka's private names the batch path relies on (its docstring's list)
PRIVATE = frozenset({"_drain_messages", "_wait_next_records", "_read_offset", "_acked",
                     "_acked_index", "_n_acked", "_commit_every", "_committed_offset",
                     "_current_event", "_create_worker_consumer", "_isolation_level",
                     "_fetcher", "_new_offset"})


def test_fausts_private_surface_is_used_in_faust_batch_only() -> None:
    """"Its private surface stays confined to one module": no other module of the
    stages names what processors/faust_batch.py takes from Faust's internals."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    used: dict[str, set[str]] = {}
    for path in sorted((root / "processors").glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                  for a in n.names}
        names |= {n.value for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        if names & PRIVATE:
            used[path.name] = names & PRIVATE
    assert set(used) == {"faust_batch.py"}, used


def test_the_installed_faust_and_aiokafka_are_the_pinned_versions() -> None:
    """The batch path is tested against the versions pyproject.toml pins exactly."""
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    deps = project["optional-dependencies"]["stream"]
    pins = dict(d.split("==") for d in deps if "==" in d)
    for name in ("faust-streaming", "aiokafka"):
        assert version(name) == pins[name], name
