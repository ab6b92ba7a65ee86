"""A process-wide thread pool for per-device work; small jobs run inline to skip hand-offs.

NumPy releases the GIL while it copies and computes on large arrays, so per-device work
overlaps across the machine's cores.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from spmd.runtime.cores import core_count

T = TypeVar("T")
R = TypeVar("R")

INLINE_BYTES = 1 << 20  # below this much data, a thread hand-off costs more than it saves


@functools.cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spmd-device")


def parallel_map(fn: Callable[[T], R], items: Iterable[T], nbytes: int) -> list[R]:
    """``[fn(item) for item in items]``, on the pool when ``nbytes`` of work make it worth it."""
    items = list(items)
    if nbytes < INLINE_BYTES or len(items) < 2:
        return [fn(item) for item in items]
    workers = core_count()  # one task per core at once
    if workers < 2:
        return [fn(item) for item in items]
    # One run of items per core, the caller's thread taking the last run itself: a hand-off
    # costs tens of microseconds, as much as a small device's whole step.
    size = -(-len(items) // workers)
    runs = [items[i : i + size] for i in range(0, len(items), size)]
    pending = [_pool(workers).submit(_run, fn, run) for run in runs[:-1]]
    last = _run(fn, runs[-1])
    return [result for future in pending for result in future.result()] + last


def _run(fn: Callable[[T], R], run: list[T]) -> list[R]:
    return [fn(item) for item in run]
