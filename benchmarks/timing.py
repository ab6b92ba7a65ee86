"""Timers shared by the benchmarks. Libraries compared in one table are timed in turns, so
that a slow spell on a shared machine lands on all of them alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

ROUNDS = 8


def _seconds(call: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) / number


def interleaved_ms(
    calls: dict[str, Callable[[], object]], rounds: int = ROUNDS, number: int = 1, turn: int = 3
) -> dict[str, float]:
    """Each call's median time in ms (per call, over batches of ``number``). The calls take
    turns of ``turn`` batches each for ``rounds`` rounds, after a warm-up; the first batch of
    a turn is not counted, as it may still share the cores with the previous library's
    spinning worker threads."""
    for call in calls.values():
        _seconds(call, number)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            _seconds(call, number)
            times[name].extend(_seconds(call, number) for _ in range(turn - 1))
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def median_ms(call: Callable[[], object], rounds: int = ROUNDS) -> float:
    return interleaved_ms({"call": call}, rounds)["call"]


def tiny_call_ms(call: Callable[[], object], number: int = 2000) -> float:
    """The best of five batches of ``number`` calls: the fixed cost of one call."""
    _seconds(call, number)
    return min(_seconds(call, number) for _ in range(5)) * 1e3
