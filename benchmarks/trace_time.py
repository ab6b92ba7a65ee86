"""Trace time against program length: programs of 1k, 10k and 100k equations.

Each workload traces a chain of elementwise operations into a Program (tracing only: no
partitioning, compiling or running) and prints the time per equation, which must stay flat
as the program grows (linear total time):

- ``plain``: the chain traced as jit traces a function with no mesh;
- ``shard_map``: the chain as a shard_map body (check_vma on), where every value carries the
  mesh axes it varies over;
- ``shard_map fori_loop``: the chain as a fori_loop inside a shard_map body, and
- ``jit fori_loop``: the same loop traced as jit traces it for a sharded argument. A loop is
  one primitive holding its body, so these programs keep their few equations at any trip
  count: their time must stay flat in total, not per equation.

Each time is also taken with Python's cyclic garbage collector off: its full collections
scan every live object, a cost that grows with the program held (the last column).

Run: ``python benchmarks/trace_time.py [--sizes 1000,10000,100000] [--budget 60]``. A size
whose projected time (from the size before it) exceeds the budget in seconds is skipped.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import time

os.environ.setdefault("SPMD_NUM_CPU_DEVICES", "8")

import numpy as np

import spmd
from spmd import P
from spmd.core.aval import ShapedArray
from spmd.core.program import Program
from spmd.core.trace import ProgramTrace, tracing
from spmd.sharding.rules import ValueSharding
from spmd.transforms.typeof import PropagatedTypes

OPS_PER_STEP = 2  # each step is ``x * a + b``: a multiply and an add


def _chain(steps: int):
    def f(x):
        for _ in range(steps):
            x = x * 1.0001 + 0.5
        return x

    return f


def _loop(steps: int):
    def f(x):
        return spmd.lax.fori_loop(0, steps, lambda i, v: v * 1.0001 + 0.5, x)

    return f


def _equations(program: Program) -> int:
    """The equations of ``program`` and of the bodies its equations hold."""
    count = 0
    for eqn in program.equations:
        count += 1
        for value in eqn.params.values():
            bodies = value if isinstance(value, tuple) else (value,)
            count += sum(_equations(b) for b in bodies if isinstance(b, Program))
    return count


def _trace(fn, aval: ShapedArray, types=None) -> Program:
    trace = ProgramTrace()
    x = trace.new_arg(aval)
    trace.types = types
    with tracing(trace):
        out = fn(x)
    return trace.finish([x.node], [out])


def plain(steps: int) -> Program:
    return _trace(_chain(steps), ShapedArray((8,), np.dtype(np.float32)))


def _mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def in_shard_map(body):
    def workload(steps: int) -> Program:
        f = spmd.shard_map(
            body(steps), mesh=_mesh(), in_specs=P("x"), out_specs=P("x"), check_vma=True
        )
        return _trace(f, ShapedArray((8,), np.dtype(np.float32)))

    return workload


def jit_loop(steps: int) -> Program:
    """The loop traced as jit traces it for an argument split over mesh axis x (where
    ``typeof`` reports shardings propagated from the argument's)."""
    return _trace(
        _loop(steps),
        ShapedArray((8,), np.dtype(np.float32)),
        PropagatedTypes(_mesh(), [ValueSharding((("x",),))]),
    )


WORKLOADS = {
    "plain": plain,
    "shard_map": in_shard_map(_chain),
    "shard_map fori_loop": in_shard_map(_loop),
    "jit fori_loop": jit_loop,
}


def _timed(workload, steps: int, collect: bool) -> tuple[float, int]:
    """Seconds to trace ``workload(steps)``, with Python's cyclic garbage collector running
    or not (its full collections scan every live object, so they cost more as the program
    grows), and the equations traced."""
    gc.collect()
    if not collect:
        gc.disable()
    try:
        start = time.perf_counter()
        program = workload(steps)
        seconds = time.perf_counter() - start
    finally:
        gc.enable()
    return seconds, _equations(program)


def _projected(done: list[tuple[int, float]], size: int) -> float:
    """The seconds a program of ``size`` equations should take, from the growth measured so
    far (linear from one measurement, the fitted power from two or more)."""
    if not done:
        return 0.0
    n2, t2 = done[-1]
    power = 1.0
    if len(done) > 1:
        n1, t1 = done[-2]
        if n1 == n2:  # a loop primitive: the program does not grow with the trip count
            return t2
        power = max(1.0, math.log(t2 / t1) / math.log(n2 / n1))
    return t2 * (size / n2) ** power


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="equations per program")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per measurement")
    parser.add_argument("--only", default=None, help="run only the workloads named (comma list)")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    chosen = options.only.split(",") if options.only else list(WORKLOADS)
    print(f"{'':<42}{'us/equation':>13}{'us/equation':>13}")
    print(f"{'workload':<22}{'equations':>10}{'seconds':>10}{'':>13}{'(gc off)':>13}")
    for name in chosen:
        workload = WORKLOADS[name]
        workload(10)  # warm caches and imports
        done: list[tuple[int, float]] = []  # (equations, seconds) measured so far
        for size in sizes:
            steps = size // OPS_PER_STEP
            projected = _projected(done, size)
            if projected > options.budget:
                print(f"{name:<22}{size:>10}{'skipped':>10}  (projected {projected:.0f} s)")
                continue
            seconds, count = _timed(workload, steps, collect=True)
            done.append((count, seconds))
            quiet, _ = _timed(workload, steps, collect=False)
            print(
                f"{name:<22}{count:>10}{seconds:>10.3f}{seconds / count * 1e6:>13.1f}"
                f"{quiet / count * 1e6:>13.1f}"
            )


if __name__ == "__main__":
    main()
