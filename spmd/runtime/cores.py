"""The cores spmd runs device work on, and how BLAS threads are shared among devices.

A process's virtual devices share its cores. Elementwise work runs one task per device on
the thread pool. Contractions call BLAS, which has threads of its own, and OpenBLAS runs
one multi-threaded call at a time: concurrent calls that each ask for several threads take
turns. So BLAS calls either run side by side on one thread each, or one after another on
every core (with at least two cores per device, or one device or one core); never two
multi-threaded calls at once, and never more threads than cores.

``watch_blas`` lets a test see every BLAS call the executor makes, with the threads it was
allowed, to check that schedule under any simulated core count (``config.cpu_cores``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from threadpoolctl import ThreadpoolController

from spmd.config import config
from spmd.sharding.device import processes_on_this_host


def core_count() -> int:
    """The cores this process schedules for: ``config.cpu_cores`` if set, else the cores it
    may run on, shared with the other processes of this job on the same host unless the
    launcher pinned each process to its own cores already."""
    if config.cpu_cores is not None:
        return config.cpu_cores
    return _usable_cores(processes_on_this_host())


@functools.cache
def _usable_cores(processes_here: int) -> int:
    """Asked once: the queries cost more than a small program's run."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    usable = usable or 1
    if usable == os.cpu_count():  # not pinned: the host's processes share every core
        usable //= processes_here
    return max(1, usable)


def contractions_one_at_a_time(devices: int) -> bool:
    """Whether contractions for ``devices`` devices run one device at a time on every core
    (rather than side by side on one thread each): with one device, one core, or at least
    two cores per device."""
    cores = core_count()
    return devices == 1 or cores == 1 or cores >= 2 * devices


@functools.cache
def _controller() -> ThreadpoolController:
    """The process's BLAS libraries, found once (looking them up costs a third of a ms)."""
    return ThreadpoolController()


_limit: list[int] = []  # the process-wide BLAS thread limits in force, innermost last


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """Hold every BLAS library of the process to ``threads`` threads meanwhile."""
    with _controller().limit(limits=threads, user_api="blas"):
        _limit.append(threads)
        try:
            yield
        finally:
            _limit.pop()


_watchers: list[Callable[[str, int, int], None]] = []
_watch_lock = threading.Lock()


def observed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a BLAS call, reported to the watchers (if any) as it starts and ends."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if not _watchers:
            return fn(*args, **kwargs)
        threads = _limit[-1] if _limit else core_count()
        token = object()
        _notify("start", id(token), threads)
        try:
            return fn(*args, **kwargs)
        finally:
            _notify("end", id(token), threads)

    return call


def _notify(event: str, token: int, threads: int) -> None:
    with _watch_lock:
        for watcher in _watchers:
            watcher(event, token, threads)


@contextlib.contextmanager
def watch_blas(watcher: Callable[[str, int, int], None]) -> Iterator[None]:
    """Call ``watcher(event, call_id, threads)`` as each BLAS call starts and ends
    (``event``: "start" or "end"; ``threads``: the BLAS threads it may use), in order."""
    _watchers.append(watcher)
    try:
        yield
    finally:
        _watchers.remove(watcher)
