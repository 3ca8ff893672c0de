from typing import Any

def frame(
    program: bytes, data: bytes, count: int, /
) -> tuple[list[int], list[str | None]] | None: ...
def build(
    program: bytes, consts: tuple[Any, ...], data: bytes, count: int, /
) -> list[Any] | None: ...
