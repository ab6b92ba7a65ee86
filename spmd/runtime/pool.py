"""A process-wide thread pool for per-device work; small jobs run inline to skip hand-offs.

NumPy releases the GIL while it copies and computes on large arrays, so per-device work
overlaps across the machine's cores.
"""

from __future__ import annotations

import functools
import itertools
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
    workers = min(core_count(), len(items))  # one task per core at once
    if workers < 2:
        return [fn(item) for item in items]
    # The caller's thread and one pool task per other core each take the next item until
    # none is left: a hand-off costs tens of microseconds, as much as a small device's whole
    # step, and a thread the machine holds back leaves its items to the others.
    results: list = [None] * len(items)
    taken = itertools.count()
    failed: list[BaseException] = []

    def work() -> None:
        while not failed and (i := next(taken)) < len(items):
            try:
                results[i] = fn(items[i])
            except BaseException as error:
                failed.append(error)
                raise

    pending = [_pool(core_count()).submit(work) for _ in range(workers - 1)]
    try:
        work()
    finally:  # every item is taken: a task not started yet has nothing left to do
        for future in pending:
            if not future.cancel():
                future.exception()  # waits; the first failure is raised below
    if failed:
        raise failed[0]
    return results
