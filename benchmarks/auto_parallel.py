"""Automatic parallelism beside JAX: jit over sharded inputs on 8 virtual CPU devices.

Run: ``python benchmarks/auto_parallel.py`` (JAX is timed in the same run when installed,
with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` and ``AxisType.Auto`` meshes).
Each row is the median of several calls after a warm-up, the libraries taking turns call
by call; ``ratio`` is JAX's time over ours (above 1: spmd is faster). The layers are also
timed in NumPy, computing the same layer in one process (``/NumPy``: ours over NumPy's).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, os.path.dirname(__file__))

from timing import interleaved_ms

TINY = "tiny cached call"
TINY_COLLECTIVES = "tiny call, 2 collectives"


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((4096, 4096), dtype=np.float32),
        "lx": rng.standard_normal((2048, 4096), dtype=np.float32),
        "w": rng.standard_normal((4096, 1024), dtype=np.float32) / 64,
        "b": rng.standard_normal(1024, dtype=np.float32),
        "tiny": np.arange(8, dtype=np.float32),
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


def spmd_cases(data: dict) -> dict[str, Callable]:
    import spmd
    import spmd.numpy as snp
    from spmd import NamedSharding, P

    grid = spmd.make_mesh((2, 4), ("x", "y"))
    line = spmd.make_mesh((8,), ("x",))
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
    grid = jax.make_mesh((2, 4), ("x", "y"), axis_types=auto * 2)
    line = jax.make_mesh((8,), ("x",), axis_types=auto)
    return cases(jax, jnp, jax.nn.sigmoid, NamedSharding, P, grid, line, data)


def numpy_layer(data: dict) -> Callable:
    return lambda: 1 / (1 + np.exp(-(data["lx"] @ data["w"] + data["b"])))


def main() -> None:
    data = inputs()
    ours, theirs = spmd_cases(data), jax_cases(data)
    print(f"{'':28} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7} {'NumPy ms':>9} {'/NumPy':>7}")
    for name, mine in ours.items():
        calls = {"spmd": mine} | ({"jax": theirs[name]} if name in theirs else {})
        if name.startswith("layer"):
            calls["numpy"] = numpy_layer(data)
        if name in (TINY, TINY_COLLECTIVES):
            ms = interleaved_ms(calls, rounds=5, number=2000 if name == TINY else 300)
        else:
            ms = interleaved_ms(calls)
        row = f"{name:28} {ms['spmd']:10.3f}"
        row += f" {ms['jax']:10.3f} {ms['jax'] / ms['spmd']:7.2f}" if "jax" in ms else f" {'-':>18}"
        if "numpy" in ms:
            row += f" {ms['numpy']:9.1f} {ms['spmd'] / ms['numpy']:7.2f}"
        print(row)
    print(f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")


if __name__ == "__main__":
    main()
