"""shard_tasks: a program cut into independent tasks, run inline, on processes and on Dask,
beside spmd.jit and NumPy.

Run: ``python benchmarks/tasks.py [--tasks 8] [--workers 2] [--rounds 3]`` (Dask rows need
the ``dask`` extra). The program is a few elementwise steps around a batched matmul:
``sigmoid(tanh(x/2 + b) @ w) * 2 - 1`` with x and b of 64 x 2048 x 256 float32 (128 MiB
each) and w of 64 x 256 x 64, cut along the batch into ``--tasks`` tasks. Rows are medians
of calls that take turns (benchmarks/timing.py); ``/NumPy`` is the row's time over NumPy's.
jit runs on the 8 virtual devices with the inputs already sharded along the batch; the
executors get the inputs as NumPy arrays, so their rows include moving the slices to the
workers and the blocks back.

The second table is the fixed cost of a task: ``--small-tasks`` tasks of a tiny program
(one row of 16 floats each), per task, to build (shard_tasks) and to run inline, on the
process pool and on Dask.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np
from timing import interleaved_ms

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P


def program(m, x, b, w):
    hidden = m.tanh(x * 0.5 + b)
    return 2 / (1 + m.exp(-(hidden @ w))) - 1


def spmd_program(x, b, w):
    return program(snp, x, b, w)


def tiny(x):
    return snp.sin(x) * 2 + 1


def inputs() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2048, 256), dtype=np.float32)
    b = rng.standard_normal((64, 2048, 256), dtype=np.float32)
    w = rng.standard_normal((64, 256, 64), dtype=np.float32) / 16
    return x, b, w


def executors(workers: int, stack: contextlib.ExitStack) -> dict:
    """The executors to compare, started and warmed up (each worker has imported spmd);
    ``stack`` shuts them down."""
    spawn = multiprocessing.get_context("spawn")
    found = {
        "threads": stack.enter_context(ThreadPoolExecutor(workers)),
        "processes": stack.enter_context(ProcessPoolExecutor(workers, mp_context=spawn)),
    }
    try:
        import distributed
    except ImportError:
        print("Dask rows left out: install the dask extra (pip install -e '.[dask]')")
    else:
        cluster = stack.enter_context(
            distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
        )
        found["dask"] = stack.enter_context(distributed.Client(cluster)).get_executor()
    holder, warm = spmd.shard_tasks(tiny, (np.ones((workers * 4, 16)),), [{0: workers * 4}])
    for executor in found.values():
        spmd.run_tasks(holder, warm, executor)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small-tasks", type=int, default=2000)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        measure(args, executors(args.workers, stack))


def measure(args: argparse.Namespace, pool: dict) -> None:
    x, b, w = inputs()
    nbytes = sum(a.nbytes for a in (x, b, w))
    print(f"inputs {nbytes / 2**20:.0f} MiB, {args.tasks} tasks, {args.workers} workers, "
          f"{os.cpu_count()} cores")  # fmt: skip

    start = time.perf_counter()
    holder, tasks = spmd.shard_tasks(spmd_program, (x, b, w), [{0: args.tasks}, {}, {}])
    build_ms = (time.perf_counter() - start) * 1e3
    mesh = spmd.make_mesh((8,), ("x",))
    on_mesh = [spmd.device_put(a, NamedSharding(mesh, P("x"))) for a in (x, b, w)]
    jitted = spmd.jit(spmd_program)
    expected = program(np, x, b, w)
    calls = {
        "NumPy": lambda: program(np, x, b, w),
        "spmd.jit (8 devices)": lambda: jitted(*on_mesh).block_until_ready(),
        "run_tasks inline": lambda: spmd.run_tasks(holder, tasks),
        **{
            f"run_tasks {name} ({args.workers})": lambda e=pool[name]: spmd.run_tasks(
                holder, tasks, e
            )
            for name in pool
        },
    }
    for name, call in calls.items():
        result = call()
        result = holder if result is None else np.asarray(result)
        np.testing.assert_allclose(result, expected, rtol=2e-4, atol=2e-5, err_msg=name)
    times = interleaved_ms(calls, rounds=args.rounds, turn=2)
    print(f"shard_tasks (trace, cut, {args.tasks} task programs): {build_ms:.1f} ms")
    print(f"{'':30}{'ms':>10}{'/NumPy':>9}")
    for name, ms in times.items():
        print(f"{name:30}{ms:10.1f}{ms / times['NumPy']:9.2f}")

    count = args.small_tasks
    small = np.random.default_rng(1).standard_normal((count, 16))
    start = time.perf_counter()
    holder, tasks = spmd.shard_tasks(tiny, (small,), [{0: count}])
    build_us = (time.perf_counter() - start) / count * 1e6
    runs = {"inline": None, **{name: e for name, e in pool.items() if name != "threads"}}
    print(f"\nper task, {count} tasks of one row of 16 floats:")
    print(f"  build (shard_tasks)      {build_us:8.1f} us")
    for name, executor in runs.items():
        start = time.perf_counter()
        spmd.run_tasks(holder, tasks, executor)
        per_task = (time.perf_counter() - start) / count * 1e6
        print(f"  run_tasks {name:14} {per_task:8.1f} us")
    np.testing.assert_allclose(holder, np.sin(small) * 2 + 1)


if __name__ == "__main__":
    main()
