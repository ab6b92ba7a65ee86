"""Per-device steps planned once and run: each step list's (a program's or a loop body's)
last uses and Compute calls, and runs of consecutive Compute steps run side by side.

Runs of consecutive per-device equations run as one task per device on the thread pool
(NumPy and BLAS release the GIL), inline when the blocks are small; contractions share BLAS
threads so that devices do not oversubscribe the cores (spmd/runtime/cores.py). A run that
goes on running (a loop body's, a cached program's) is timed both ways on its first runs
and then keeps the faster: whether hand-offs pay depends on the cores free. Each device's
values are dropped after their last use, inside such runs too.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.interpret import Access, last_uses, literal_value, reuse_plan, runner
from spmd.core.program import Literal, Var
from spmd.runtime.buffers import on_device
from spmd.runtime.cores import blas_threads, contractions_one_at_a_time, core_count, observed
from spmd.runtime.pool import INLINE_BYTES, parallel_map
from spmd.sharding.device_program import (
    Alias,
    Branch,
    Collective,
    Compute,
    Loop,
    Reshard,
)

PYTHON_SCALARS = frozenset({bool, int, float, complex})


@dataclass(eq=False)
class Plan:
    """A step list's plan, worked out once: each value's last use and each Compute step's
    per-device call (by step index)."""

    last_use: dict[Var, int]
    calls: dict[int, Any]


_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def plan_of(owner, steps, outputs, library) -> Plan:
    """The plan of ``steps`` (``owner``'s: a Partitioned or a Block) whose results are
    ``outputs``, made once per owner."""
    found = _PLANS.get(owner)
    if found is None:
        accesses = _accesses(steps)
        last_use = last_uses(accesses, list(outputs))
        reuse = reuse_plan(accesses, last_use)
        calls = {
            index: _call(step, index, reuse.get(index), last_use, library)
            for index, step in enumerate(steps)
            if isinstance(step, Compute)
        }
        found = _PLANS[owner] = Plan(last_use, calls)
    return found


def _accesses(steps) -> list[Access]:
    """What each step reads and writes, for core's one last-use and reuse analysis: an
    elementwise Compute step makes fresh buffers keyed by their sharding; a Reshard, an
    Alias, a collective or a loop may give back (views of) what it reads."""
    accesses = []
    for step in steps:
        if isinstance(step, Compute):
            writes = step.eqn.primitive.rules.writes_into
            accesses.append(
                Access(step.inputs, step.outputs, writes, writes and step.reusable, step.shardings)
            )
        elif isinstance(step, Reshard | Alias):
            accesses.append(Access((step.src,), (step.dst,)))
        elif isinstance(step, Collective):
            accesses.append(Access((step.input,), (step.output,)))
        elif isinstance(step, Loop):
            accesses.append(Access(step.operands, step.outputs))
        elif isinstance(step, Branch):
            accesses.append(Access((step.index, *step.operands), step.outputs))
        else:  # PerDevice, FromHost: from the host
            accesses.append(Access((), (step.var,)))
    return accesses


def drop(env: dict, last_use: dict, index: int) -> None:
    for var in [v for v in env if last_use.get(v, -1) <= index]:
        del env[var]


def _call(step: Compute, index: int, reuse: int | None, last_use: dict[Var, int], library):
    """``(env, position) -> None``: run step ``index`` for one device with its backend's
    array namespace, its dispatch decided once, and let go of that device's values that die
    there."""
    primitive = step.eqn.primitive
    run = runner(
        primitive,
        library.xp,
        library.name,
        params=any(step.params),
        out=reuse is not None,
        wrap=observed if primitive.rules.calls_blas else None,
    )
    getters = [
        _constant(literal_value(a.value, library.xp))
        if isinstance(a, Literal)
        else (lambda env, position, var=a: env[var][position])
        for a in step.inputs
    ]
    used = [a for a in step.inputs if isinstance(a, Var)] + list(step.outputs)
    dying = [var for var in dict.fromkeys(used) if last_use.get(var, -1) <= index]

    def call(env: dict, position: int) -> None:
        values = [get(env, position) for get in getters]
        params = step.params[position]
        if reuse is not None:
            target = values[reuse]
            if type(target) is np.ndarray and target.flags.writeable and target.ndim:
                params = {**params, "out": target}
        for var, value in zip(step.outputs, run(values, params), strict=True):
            env[var][position] = value
        for var in dying:
            del env[var][position]

    return call


def on(device, value: Any) -> Any:
    """A host value as ``device``'s code takes it: a Python scalar stays one (it promotes
    weakly), anything else becomes the device's array."""
    return value if type(value) in PYTHON_SCALARS else on_device(device, value)


def _constant(value: Any):
    return lambda env, position: value


@dataclass
class _Timings:
    """The best time of a run of steps each way: on the pool, and inline."""

    pooled: float = math.inf
    inline: float = math.inf
    tries: int = 0


TRIES = 4  # runs of a segment, alternating the two ways, before it keeps the faster
# Elementwise work on this much data (no contraction) runs on the pool without trials: a
# hand-off costs tens of microseconds, the work milliseconds, and trials on a busy machine
# can pick the slower way for good.
POOLED_BYTES = 8 * INLINE_BYTES
_TIMINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # first Compute → _Timings


def run_segment(segment: list[tuple[Compute, Any]], env: dict, positions: tuple[int, ...]) -> None:
    """Run consecutive per-device equations for this process's devices: one task per
    device on the thread pool when there is enough data, inline otherwise (or as timing
    its first runs showed faster, unless it is elementwise work on POOLED_BYTES or more).
    Contractions share the cores as spmd/runtime/cores.py says."""
    if not segment or not positions:
        return
    count = len(positions)
    first = positions[0]
    first_inputs = [a for s, _ in segment for a in s.inputs if isinstance(a, Var) and a in env]
    nbytes = count * sum(
        math.prod(np.shape(env[v][first])) * v.aval.dtype.itemsize
        for v in dict.fromkeys(first_inputs)
    )
    for step, _ in segment:
        for var in step.outputs:
            env[var] = {}
    if nbytes < INLINE_BYTES or count < 2:
        _inline(segment, env, positions)
        return
    if nbytes >= POOLED_BYTES and not any(_calls_blas(item) for item in segment):
        _pooled(segment, env, positions)
        return
    timings = _TIMINGS.get(segment[0][0])
    if timings is None:
        timings = _TIMINGS[segment[0][0]] = _Timings()
    if timings.tries >= TRIES:
        way = _inline if timings.inline < timings.pooled else _pooled
        way(segment, env, positions)
        return
    pooled = timings.tries % 2 == 0
    start = time.perf_counter()
    (_pooled if pooled else _inline)(segment, env, positions)
    took = time.perf_counter() - start
    timings.tries += 1
    if pooled:
        timings.pooled = min(timings.pooled, took)
    else:
        timings.inline = min(timings.inline, took)


def _inline(segment: list[tuple[Compute, Any]], env: dict, positions: tuple[int, ...]) -> None:
    """The devices' steps one device after another on this thread."""
    for position in positions:
        _run_calls(segment, env, position)


def _pooled(segment: list[tuple[Compute, Any]], env: dict, positions: tuple[int, ...]) -> None:
    """The devices' steps side by side on the pool; contractions as cores.py says."""

    def side_by_side(steps: list) -> None:
        parallel_map(functools.partial(_run_calls, steps, env), positions, INLINE_BYTES)

    if not any(_calls_blas(item) for item in segment):
        side_by_side(segment)
    elif contractions_one_at_a_time(len(positions)):
        with blas_threads(core_count()):
            for blas, run in itertools.groupby(segment, _calls_blas):
                if not blas:
                    side_by_side(list(run))
                    continue
                for _, call in run:  # one device at a time, each call on every core
                    for position in positions:
                        call(env, position)
    else:
        with blas_threads(1):  # devices side by side, one BLAS thread each
            side_by_side(segment)


def _calls_blas(item: tuple[Compute, Any]) -> bool:
    return item[0].eqn.primitive.rules.calls_blas


def _run_calls(segment: list[tuple[Compute, Any]], env: dict, position: int) -> None:
    for _, call in segment:
        call(env, position)
