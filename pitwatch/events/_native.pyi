from collections.abc import Callable
from typing import Any

def frame(
    program: bytes, data: bytes, count: int, /
) -> tuple[list[int], list[str | None]] | None: ...
def build(
    program: bytes, consts: tuple[Any, ...], data: bytes, count: int, /
) -> list[Any] | None: ...
def body(event: Any, /) -> bytes | None: ...

EVENT_COLUMNS: tuple[tuple[str, str], ...]

def event_columns(events: list[Any], positions: list[int], fingerprint: str,
                  body_of: Callable[[Any], bytes], /) -> tuple[Any, ...] | None: ...
