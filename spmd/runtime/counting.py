"""Counting collectives as they run, for tests and for users who want to see communication."""

from __future__ import annotations

import contextlib
import contextvars
from collections import Counter
from collections.abc import Iterator

_ACTIVE: contextvars.ContextVar[tuple[CollectiveCounts, ...]] = contextvars.ContextVar(
    "spmd_collective_counts", default=()
)


class CollectiveCounts(Counter):
    """Collective name (``"all-reduce"``, ``"all-gather"``, ...) → how many ran; ``bytes``
    maps the same names to the bytes they moved between devices."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes: Counter = Counter()

    @property
    def total(self) -> int:
        return sum(self.values())

    def __repr__(self) -> str:
        items = ", ".join(f"{k!r}: {v} ({self.bytes[k]} B)" for k, v in sorted(self.items()))
        return f"CollectiveCounts({{{items}}})"


@contextlib.contextmanager
def count_collectives() -> Iterator[CollectiveCounts]:
    """``with spmd.debug.count_collectives() as counts: ...`` then ``counts["all-reduce"]``."""
    counts = CollectiveCounts()
    token = _ACTIVE.set((*_ACTIVE.get(), counts))
    try:
        yield counts
    finally:
        _ACTIVE.reset(token)


def record(name: str, nbytes: int) -> None:
    for counts in _ACTIVE.get():
        counts[name] += 1
        counts.bytes[name] += nbytes
