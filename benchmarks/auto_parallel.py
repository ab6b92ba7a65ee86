"""Automatic parallelism beside JAX: jit over sharded inputs on virtual CPU devices.

Run: ``python benchmarks/auto_parallel.py`` (JAX is timed in the same run when installed,
on as many host devices, with ``AxisType.Auto`` meshes). Each row is the median of several
calls after a warm-up, the libraries taking turns call by call; ``ratio`` is JAX's time over
ours (above 1: spmd is faster). The layers and the elementwise rows are also timed in
NumPy, computing the same in one process (``/NumPy``: ours over NumPy's). ``--devices N``
(8 by default), ``--cores K`` and ``--scaling`` (1 to 16 devices) are described in
benchmarks/scaling.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure, report

ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

TINY = "tiny cached call"
ELEMENTWISE = ("2*sin(x)+1", "10-step chain")


def chain(m, v):
    """Ten elementwise steps (where, exp, *, +, tanh, comparisons): one fused kernel per
    device under spmd's jit, one XLA loop under JAX's."""
    a = m.where(v > 0, v, v * 0.1)
    b = m.exp(a * -0.5)
    c = m.tanh(b * v + 1.0)
    return m.where(c > 0.5, c, b)


TINY_COLLECTIVES = "tiny call, 2 collectives"


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((4096, 4096), dtype=np.float32),
        "lx": rng.standard_normal((2048, 4096), dtype=np.float32),
        "w": rng.standard_normal((4096, 1024), dtype=np.float32) / 64,
        "b": rng.standard_normal(1024, dtype=np.float32),
        "tiny": np.arange(ARGS.devices, dtype=np.float32),
        "small": np.arange(64, dtype=np.float32).reshape(8, 8),
    }


def cases(lib, numpy, sigmoid, sharding, spec, grid, line, data) -> dict[str, Callable]:
    """Every case for ``lib`` (spmd or jax: both have ``device_put`` and ``jit``), as calls
    that wait for their result; a case the library refuses is reported and left out."""

    def put(name: str, mesh, *entries):
        return lib.device_put(data[name], sharding(mesh, spec(*entries)))

    x = put("x", grid, "x", "y")
    batch = [put("lx", line, "x", None), put("w", line), put("b", line)]
    contracting = [put("lx", line, None, "x"), put("w", line, "x", None), batch[2]]
    layer = lib.jit(lambda v, w, b: sigmoid(v @ w + b))
    programs = {
        "2*sin(x)+1": (lib.jit(lambda v: 2 * numpy.sin(v) + 1), [x]),
        "10-step chain": (lib.jit(lambda v: chain(numpy, v)), [x]),
        "x.sum(axis=0)": (lib.jit(lambda v: v.sum(axis=0)), [x]),
        "layer, batch sharded": (layer, batch),
        "layer, contracting sharded": (layer, contracting),
        TINY: (lib.jit(lambda v: v + 1), [put("tiny", line, "x")]),
        # an all-gather and an all-reduce around an 8x8 matmul: the fixed cost of collectives
        TINY_COLLECTIVES: (lib.jit(lambda v: (v * 2 + 1).T @ v), [put("small", grid, "x", "y")]),
    }
    calls = {}
    for name, (fn, args) in programs.items():
        call = lambda fn=fn, args=args: fn(*args).block_until_ready()  # noqa: E731
        try:  # JAX 0.10 may refuse a contraction over a sharded axis without a hint
            call()
        except Exception as error:  # report whatever the library raised
            print(f"{lib.__name__}, {name}: {type(error).__name__}")
            continue
        calls[name] = call
    return calls


def _grid() -> tuple[int, int]:
    """Two rows of devices (2 x 4 for 8), or one row when the count is odd."""
    rows = 2 if ARGS.devices % 2 == 0 else 1
    return rows, ARGS.devices // rows


def spmd_cases(data: dict) -> dict[str, Callable]:
    import spmd
    import spmd.numpy as snp
    from spmd import NamedSharding, P

    grid = spmd.make_mesh(_grid(), ("x", "y"))
    line = spmd.make_mesh((ARGS.devices,), ("x",))
    return cases(spmd, snp, spmd.nn.sigmoid, NamedSharding, P, grid, line, data)


def jax_cases(data: dict) -> dict[str, Callable]:
    try:
        import jax
        import jax.numpy as jnp
        from jax.sharding import AxisType, NamedSharding
        from jax.sharding import PartitionSpec as P
    except ImportError:
        return {}
    auto = (AxisType.Auto,)
    grid = jax.make_mesh(_grid(), ("x", "y"), axis_types=auto * 2)
    line = jax.make_mesh((ARGS.devices,), ("x",), axis_types=auto)
    return cases(jax, jnp, jax.nn.sigmoid, NamedSharding, P, grid, line, data)


def numpy_layer(data: dict) -> Callable:
    return lambda: 1 / (1 + np.exp(-(data["lx"] @ data["w"] + data["b"])))


def numpy_elementwise(name: str, data: dict) -> Callable:
    x = data["x"]
    return (lambda: 2 * np.sin(x) + 1) if name == ELEMENTWISE[0] else (lambda: chain(np, x))


def measure() -> dict[str, dict[str, float]]:
    """Each case's time in ms, per library (spmd, jax, numpy)."""
    data = inputs()
    ours, theirs = spmd_cases(data), jax_cases(data)
    rows = {}
    for name, mine in ours.items():
        calls = {"spmd": mine} | ({"jax": theirs[name]} if name in theirs else {})
        if name.startswith("layer"):
            calls["numpy"] = numpy_layer(data)
        if name in ELEMENTWISE:
            calls["numpy"] = numpy_elementwise(name, data)
        if name in (TINY, TINY_COLLECTIVES):
            rows[name] = interleaved_ms(calls, rounds=5, number=2000 if name == TINY else 300)
        else:
            rows[name] = interleaved_ms(calls)
    return rows


def print_rows(rows: dict[str, dict[str, float]]) -> None:
    print(f"{'':28} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7} {'NumPy ms':>9} {'/NumPy':>7}")
    for name, ms in rows.items():
        row = f"{name:28} {ms['spmd']:10.3f}"
        row += f" {ms['jax']:10.3f} {ms['jax'] / ms['spmd']:7.2f}" if "jax" in ms else f" {'-':>18}"
        if "numpy" in ms:
            row += f" {ms['numpy']:9.1f} {ms['spmd'] / ms['numpy']:7.2f}"
        print(row)


if __name__ == "__main__":
    report(ARGS, __file__, measure, print_rows)
