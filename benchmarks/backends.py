"""The perf workloads on each backend (spmd/backends/), and NumPy's against another checkout.

Run, from the repository root:

    .venv/bin/python benchmarks/backends.py                  (numpy and torch, if installed)
    .venv/bin/python benchmarks/backends.py --ref /tmp/before (A/B: NumPy, this tree vs that)

A backend is fixed when a process first lists its devices, so each (backend, checkout) runs in
its own interpreter; they take turns for ``--rounds`` rounds, and each cell is the median over
the rounds of that run's median. ``--ref DIR`` adds a NumPy run importing spmd from DIR (a
worktree at another commit: ``git worktree add /tmp/before HEAD~1``), to show that the NumPy
backend got no slower. The workloads are benchmarks/auto_parallel.py's on 8 virtual devices,
and a psum of 8 × 1 MiB blocks in shard_map.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker() -> None:
    """Time every workload under this process's backend; print one JSON line of ms."""
    sys.path.insert(0, HERE)
    import numpy as np
    from timing import interleaved_ms

    import spmd
    import spmd.numpy as snp
    from spmd import NamedSharding, P
    from spmd.lax import psum

    rng = np.random.default_rng(0)
    grid = spmd.make_mesh((2, 4), ("x", "y"))
    line = spmd.make_mesh((8,), ("x",))

    def put(shape, mesh, *entries, scale=1.0):
        value = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        return spmd.device_put(value, NamedSharding(mesh, P(*entries)))

    x = put((4096, 4096), grid, "x", "y")
    lx, w, b = put((2048, 4096), line), put((4096, 1024), line, scale=1 / 64), put(1024, line)
    batch = [spmd.device_put(lx, NamedSharding(line, P("x", None))), w, b]
    contracting = [
        spmd.device_put(lx, NamedSharding(line, P(None, "x"))),
        spmd.device_put(w, NamedSharding(line, P("x", None))),
        b,
    ]
    layer = spmd.jit(lambda v, w, b: spmd.nn.sigmoid(v @ w + b))
    tiny = put(8, line, "x")
    blocks = put((8, 262144), line, "x")
    total = spmd.jit(spmd.shard_map(lambda v: psum(v, "x"), mesh=line, in_specs=P("x"),
                                    out_specs=P()))  # fmt: skip
    programs = {
        "2*sin(x)+1": (spmd.jit(lambda v: 2 * snp.sin(v) + 1), [x]),
        "x.sum(axis=0)": (spmd.jit(lambda v: v.sum(axis=0)), [x]),
        "layer, batch sharded": (layer, batch),
        "layer, contracting sharded": (layer, contracting),
        "tiny cached call": (spmd.jit(lambda v: v + 1), [tiny]),
        "psum 8 x 1 MiB": (total, [blocks]),
    }
    times = {}
    for name, (fn, args) in programs.items():
        call = lambda fn=fn, args=args: fn(*args).block_until_ready()  # noqa: E731
        number = 2000 if name == "tiny cached call" else 1
        times[name] = interleaved_ms({name: call}, rounds=3, number=number)[name]
    print(json.dumps({"backend": getattr(spmd.devices()[0], "backend", "numpy"), "ms": times}))


def run(backend: str, source: str) -> dict:
    env = {**os.environ, "SPMD_BACKEND": backend, "SPMD_NUM_CPU_DEVICES": "8"}
    env["PYTHONPATH"] = source + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker"],
        capture_output=True, text=True, env=env, cwd=source,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"{backend} at {source} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["ms"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ref", help="another checkout, for a NumPy A/B")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.worker:
        return worker()
    runs = {"numpy": ("numpy", ROOT)}
    if args.ref:
        runs["numpy, ref"] = ("numpy", os.path.abspath(args.ref))
    if importlib.util.find_spec("torch") is not None:
        runs["torch cpu"] = ("torch", ROOT)
    results: dict[str, list[dict]] = {label: [] for label in runs}
    for _ in range(args.rounds):
        for label, (backend, source) in runs.items():
            results[label].append(run(backend, source))
    names = list(results["numpy"][0])
    ms = {
        label: {n: statistics.median(r[n] for r in rounds) for n in names}
        for label, rounds in results.items()
    }
    labels = list(runs)
    head = f"ms, median of {args.rounds} runs"
    print(f"{head:28}" + "".join(f"{label:>13}" for label in labels)
          + "".join(f"{label + '/numpy':>17}" for label in labels[1:]))  # fmt: skip
    for n in names:
        row = f"{n:28}" + "".join(f"{ms[label][n]:13.3f}" for label in labels)
        row += "".join(f"{ms[label][n] / ms['numpy'][n]:17.2f}" for label in labels[1:])
        print(row)
    print(f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")


if __name__ == "__main__":
    main()
