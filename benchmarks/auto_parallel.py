"""Automatic parallelism beside JAX: jit over sharded inputs on 8 virtual CPU devices.

Run: ``python benchmarks/auto_parallel.py`` (JAX is timed in the same run when installed,
with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` and ``AxisType.Auto`` meshes).
Each row is the median of several calls after a warm-up; ``ratio`` is JAX's time over
ours (above 1: spmd is faster). The layers are also compared with NumPy computing the same
layer in one process.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

REPEATS = 7


def median_ms(call, repeats: int = REPEATS) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def tiny_call_ms(call, number: int = 2000) -> float:
    call()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e3


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((4096, 4096), dtype=np.float32),
        "lx": rng.standard_normal((2048, 4096), dtype=np.float32),
        "w": rng.standard_normal((4096, 1024), dtype=np.float32) / 64,
        "b": rng.standard_normal(1024, dtype=np.float32),
        "tiny": np.arange(8, dtype=np.float32),
    }


def spmd_times(data: dict) -> dict[str, float]:
    import spmd
    import spmd.numpy as snp
    from spmd import NamedSharding, P

    grid = spmd.make_mesh((2, 4), ("x", "y"))
    line = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(data["x"], NamedSharding(grid, P("x", "y")))
    batch = [
        spmd.device_put(data["lx"], NamedSharding(line, P("x", None))),
        spmd.device_put(data["w"], NamedSharding(line, P())),
        spmd.device_put(data["b"], NamedSharding(line, P())),
    ]
    contracting = [
        spmd.device_put(data["lx"], NamedSharding(line, P(None, "x"))),
        spmd.device_put(data["w"], NamedSharding(line, P("x", None))),
        batch[2],
    ]
    tiny = spmd.device_put(data["tiny"], NamedSharding(line, P("x")))
    elementwise = spmd.jit(lambda v: 2 * snp.sin(v) + 1)
    reduction = spmd.jit(lambda v: v.sum(axis=0))
    layer = spmd.jit(lambda v, w, b: spmd.nn.sigmoid(v @ w + b))
    add_one = spmd.jit(lambda v: v + 1)
    return {
        "2*sin(x)+1": median_ms(lambda: elementwise(x).block_until_ready()),
        "x.sum(axis=0)": median_ms(lambda: reduction(x).block_until_ready()),
        "layer, batch sharded": median_ms(lambda: layer(*batch).block_until_ready()),
        "layer, contracting sharded": median_ms(lambda: layer(*contracting).block_until_ready()),
        "tiny cached call": tiny_call_ms(lambda: add_one(tiny)),
    }


def jax_times(data: dict) -> dict[str, float] | None:
    try:
        import jax
        import jax.numpy as jnp
        from jax.sharding import AxisType, NamedSharding
        from jax.sharding import PartitionSpec as P
    except ImportError:
        return None
    auto = (AxisType.Auto,)
    grid = jax.make_mesh((2, 4), ("x", "y"), axis_types=auto * 2)
    line = jax.make_mesh((8,), ("x",), axis_types=auto)
    x = jax.device_put(data["x"], NamedSharding(grid, P("x", "y")))
    batch = [
        jax.device_put(data["lx"], NamedSharding(line, P("x", None))),
        jax.device_put(data["w"], NamedSharding(line, P())),
        jax.device_put(data["b"], NamedSharding(line, P())),
    ]
    contracting = [
        jax.device_put(data["lx"], NamedSharding(line, P(None, "x"))),
        jax.device_put(data["w"], NamedSharding(line, P("x", None))),
        batch[2],
    ]
    tiny = jax.device_put(data["tiny"], NamedSharding(line, P("x")))
    elementwise = jax.jit(lambda v: 2 * jnp.sin(v) + 1)
    reduction = jax.jit(lambda v: v.sum(axis=0))
    layer = jax.jit(lambda v, w, b: jax.nn.sigmoid(v @ w + b))
    add_one = jax.jit(lambda v: v + 1)
    times = {
        "2*sin(x)+1": median_ms(lambda: elementwise(x).block_until_ready()),
        "x.sum(axis=0)": median_ms(lambda: reduction(x).block_until_ready()),
        "layer, batch sharded": median_ms(lambda: layer(*batch).block_until_ready()),
        "tiny cached call": tiny_call_ms(lambda: add_one(tiny).block_until_ready()),
    }
    try:  # JAX 0.10 refuses a contraction over a sharded axis without a hint
        times["layer, contracting sharded"] = median_ms(
            lambda: layer(*contracting).block_until_ready()
        )
    except Exception as error:  # report whatever JAX raised
        print(f"JAX, layer with the contracting axis sharded: {type(error).__name__}")
    return times


def numpy_layer_ms(data: dict) -> float:
    def layer() -> np.ndarray:
        return 1 / (1 + np.exp(-(data["lx"] @ data["w"] + data["b"])))

    return median_ms(layer)


def main() -> None:
    data = inputs()
    ours = spmd_times(data)
    theirs = jax_times(data) or {}
    numpy_ms = numpy_layer_ms(data)
    print(f"{'':28} {'spmd ms':>10} {'JAX ms':>10} {'ratio':>7} {'NumPy ms':>9}")
    for name, mine in ours.items():
        other = theirs.get(name)
        jax_text = f"{other:10.3f}" if other is not None else f"{'-':>10}"
        ratio = f"{other / mine:7.2f}" if other is not None else f"{'-':>7}"
        numpy_text = f"{numpy_ms:9.1f}" if name.startswith("layer") else f"{'':>9}"
        print(f"{name:28} {mine:10.3f} {jax_text} {ratio} {numpy_text}")
    print(f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")


if __name__ == "__main__":
    main()
