"""Offsets the consumer skipped, and how they are read back.

Around a rebalance Faust can hand a partition over with a hole in it: it drops the
records it fetched while the flow was stopped, and where the group committed nothing
(or 0) it resumes from its fetch position instead of seeking. The audit asks, before
the first message of each fetch, what came before it unread, and handles that first,
in order. Offsets that hold no committed record (transaction markers, aborted
batches) come back as nothing; offsets the broker deleted before anyone read them come
back named as lost (`Stretch.lost`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from .catch_up import Record, Stretch

#: where the group's reading of a partition starts (committed offset, else its first)
StartOffset = Callable[[str, int], Awaitable[int]]
#: the messages of a partition with offsets in [start, stop)
Read = Callable[[str, int, int, int], Awaitable[list[Record]]]


async def unread_before(position: Mapping[tuple[str, int], int], topic: str, partition: int,
                        offset: int, start_offset: StartOffset, read: Read) -> Stretch:
    """The messages of the partition before `offset` that never reached the audit:
    after the last one it read there, or, for the first message since the assignment,
    from where the group's reading starts. Empty when nothing was skipped; its `start`
    is the first offset the audit had not handled (it may now move past all of them)."""
    last = position.get((topic, partition))
    start = last + 1 if last is not None else await start_offset(topic, partition)
    if offset <= start:
        return Stretch(start=offset)
    got = await read(topic, partition, start, offset)
    return Stretch(got, start, getattr(got, "lost", None))
