"""Loops as primitives: a long ``scan`` of an RNN cell, a ``fori_loop`` training loop on 8
devices, and the memory of reverse mode through the scan, beside JAX where it is installed.

Run: ``python benchmarks/control_flow.py [scan|train|memory]`` (all three by default).

- ``scan``: an RNN cell ``h = tanh(h @ W + x_t @ U + b)`` (hidden 256, batch 64, inputs 32,
  float32) scanned over 10 and over 10,000 steps. Tracing (``make_jaxpr``) and lowering
  (``jit(f).lower(...)``) of the long scan, against the short one, and the length of the
  program's text; then the steady time per step of the jitted scan, of JAX's, and of a Python
  loop over a jitted step, with the body's own work (the same cell in NumPy, step by step).
  The loop's overhead per step is the scan's time per step less the body's own work.
- ``train``: ``fori_loop`` over 20 data-parallel SGD steps of an MLP (256-512-256, batch
  1024 split over 8 devices, weights replicated), one jitted call, against JAX on 8 host
  devices, timed in turns.
- ``memory``: peak resident memory (MiB above the start, a fresh process each) of the
  gradient through the 10,000-step scan, with and without ``checkpoint`` on the body, and
  of the forward scan alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("SPMD_NUM_CPU_DEVICES", "8")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import itertools

import numpy as np
from timing import interleaved_ms

HIDDEN, BATCH, INPUTS = 256, 64, 32
SHORT, LONG = 10, 10_000


def rnn_inputs(steps: int) -> tuple:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    u = (rng.standard_normal((INPUTS, HIDDEN)) / np.sqrt(INPUTS)).astype(np.float32)
    b = np.zeros(HIDDEN, np.float32)
    h0 = np.zeros((BATCH, HIDDEN), np.float32)
    xs = rng.standard_normal((steps, BATCH, INPUTS)).astype(np.float32)
    return (w, u, b), h0, xs


def rnn(lib, numpy, remat: bool = False):
    """``run(params, h0, xs) -> final h`` scanning the cell with ``lib.lax.scan``."""

    def cell(params, h, x):
        w, u, b = params
        return numpy.tanh(h @ w + x @ u + b)

    def run(params, h0, xs):
        def body(h, x):
            h = cell(params, h, x)
            return h, None

        body = lib.checkpoint(body) if remat else body
        h, _ = lib.lax.scan(body, h0, xs)
        return h

    return cell, run


def _seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def scan_rows() -> None:
    import spmd
    import spmd.numpy as snp

    cell, run = rnn(spmd, snp)
    short, long = rnn_inputs(SHORT), rnn_inputs(LONG)
    print(f"scan of an RNN cell (hidden {HIDDEN}, batch {BATCH}, float32)")
    for what, fn in (
        ("make_jaxpr", lambda a: spmd.make_jaxpr(run)(*a)),
        ("jit(f).lower", lambda a: spmd.jit(run).lower(*a)),
    ):
        fn(short)
        t_short = min(_seconds(lambda fn=fn: fn(short)) for _ in range(5))
        t_long = min(_seconds(lambda fn=fn: fn(long)) for _ in range(5))
        print(
            f"  {what:14} {SHORT} steps {t_short * 1e3:8.2f} ms, {LONG} steps "
            f"{t_long * 1e3:8.2f} ms: long/short {t_long / t_short:5.2f}"
        )
    text_short = str(spmd.make_jaxpr(run)(*short))
    text_long = str(spmd.make_jaxpr(run)(*long))
    print(f"  program text: {len(text_short)} chars ({SHORT} steps), {len(text_long)} ({LONG})")

    params, h0, xs = long
    jitted = spmd.jit(run)
    step = spmd.jit(lambda p, h, x: cell(p, h, x))

    def python_loop():
        h = h0
        for t in range(LONG):
            h = step(params, h, xs[t])
        return np.asarray(h)

    def numpy_body():
        h = h0
        for t in range(LONG):
            h = np.tanh(h @ params[0] + xs[t] @ params[1] + params[2])
        return h

    expected = numpy_body()
    got = np.asarray(jitted(params, h0, xs))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    calls = {
        "spmd scan": lambda: np.asarray(jitted(params, h0, xs)),
        "python loop": python_loop,
        "numpy body": numpy_body,
    }
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    if jax is not None:
        _, jax_run = rnn(jax, jnp)
        jax_jitted = jax.jit(jax_run)
        jparams = tuple(jnp.asarray(p) for p in params)
        jh0, jxs = jnp.asarray(h0), jnp.asarray(xs)
        np.testing.assert_allclose(
            np.asarray(jax_jitted(jparams, jh0, jxs)), expected, rtol=1e-4, atol=1e-4
        )
        calls["jax scan"] = lambda: jax_jitted(jparams, jh0, jxs).block_until_ready()
    ms = interleaved_ms(calls, rounds=3, turn=2)
    per_step = {k: v * 1e3 / LONG for k, v in ms.items()}
    body = per_step["numpy body"]
    print(f"  steady time per step (µs, median), {LONG} steps:")
    for name, us in per_step.items():
        print(f"    {name:12} {us:8.2f}")
    overhead = per_step["spmd scan"] - body
    print(f"  scan overhead per step over the body's own work: {overhead:.2f} µs")
    if "jax scan" in per_step:
        print(f"  JAX scan / spmd scan: {per_step['jax scan'] / per_step['spmd scan']:.2f}")


WIDTHS = (256, 512, 256)
TRAIN_BATCH, TRAIN_STEPS = 1024, 20


def train_call(lib, numpy, mesh, sharding, spec):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((TRAIN_BATCH, WIDTHS[0])).astype(np.float32)
    y = rng.standard_normal((TRAIN_BATCH, WIDTHS[-1])).astype(np.float32)
    weights = [
        (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32)
        for m, n in itertools.pairwise(WIDTHS)
    ]

    def loss(params, x, y):
        h = x
        for k, w in enumerate(params):
            h = h @ w
            if k < len(params) - 1:
                h = numpy.tanh(h)
        return numpy.mean((h - y) ** 2)

    @lib.jit
    def train(params, x, y):
        def step(i, params):
            grads = lib.grad(loss)(params, x, y)
            return [w - 0.01 * g for w, g in zip(params, grads)]  # noqa: B905

        return lib.lax.fori_loop(0, TRAIN_STEPS, step, params)

    replicated = sharding(mesh, spec())
    params = [lib.device_put(w, replicated) for w in weights]
    batch = sharding(mesh, spec("batch"))
    xs, ys = lib.device_put(x, batch), lib.device_put(y, batch)
    return lambda: [np.asarray(w) for w in train(params, xs, ys)]


def train_rows() -> None:
    import spmd
    import spmd.numpy as snp

    mesh = spmd.make_mesh((8,), ("batch",))
    calls = {"spmd": train_call(spmd, snp, mesh, spmd.NamedSharding, spmd.P)}
    try:
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec
    except ImportError:
        jax = None
    if jax is not None:
        jmesh = jax.make_mesh((8,), ("batch",))
        calls["jax"] = train_call(jax, jnp, jmesh, NamedSharding, PartitionSpec)
        for a, b in zip(calls["spmd"](), calls["jax"](), strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    ms = interleaved_ms(calls, rounds=5)
    print(f"fori_loop of {TRAIN_STEPS} data-parallel SGD steps on 8 devices (ms, median)")
    print("    " + "  ".join(f"{name} {t:8.2f}" for name, t in ms.items()))
    if "jax" in ms:
        print(f"  JAX / spmd: {ms['jax'] / ms['spmd']:.2f}")


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def memory_one(kind: str) -> float:
    import spmd
    import spmd.numpy as snp

    _, run = rnn(spmd, snp, remat=kind == "grad, checkpoint")
    params, h0, xs = rnn_inputs(LONG)
    if kind == "forward":
        fn = spmd.jit(run)
        call = lambda: np.asarray(fn(params, h0, xs))  # noqa: E731
    else:
        fn = spmd.jit(spmd.grad(lambda p, h, x: run(p, h, x).sum()))
        call = lambda: [np.asarray(g) for g in fn(params, h0, xs)]  # noqa: E731
    call()
    start = _status_mib("VmRSS")
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak (VmHWM) starts again from here
    call()
    return _status_mib("VmHWM") - start


def memory_rows() -> None:
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536"}
    print(f"peak MiB above the start, {LONG}-step scan (h: {BATCH * HIDDEN * 4 / 2**20:.3f} MiB)")
    for kind in ("forward", "grad", "grad, checkpoint"):
        command = [sys.executable, __file__, "--memory-one", kind]
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        print(f"  {kind:18} {float(done.stdout.split()[-1]):8.1f}")


def main() -> None:
    if sys.argv[1:2] == ["--memory-one"]:
        print(memory_one(sys.argv[2]))
        return
    chosen = sys.argv[1:] or ["scan", "train", "memory"]
    for name in chosen:
        {"scan": scan_rows, "train": train_rows, "memory": memory_rows}[name]()


if __name__ == "__main__":
    main()
