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


def times(lib, numpy, sigmoid, sharding, spec, grid, line, data: dict) -> dict[str, float]:
    """Every case for ``lib`` (spmd or jax: both have ``device_put`` and ``jit``); a case the
    library refuses is reported and left out."""

    def put(name: str, mesh, *entries):
        return lib.device_put(data[name], sharding(mesh, spec(*entries)))

    x = put("x", grid, "x", "y")
    batch = [put("lx", line, "x", None), put("w", line), put("b", line)]
    contracting = [put("lx", line, None, "x"), put("w", line, "x", None), batch[2]]
    layer = lib.jit(lambda v, w, b: sigmoid(v @ w + b))
    cases = {
        "2*sin(x)+1": (lib.jit(lambda v: 2 * numpy.sin(v) + 1), [x]),
        "x.sum(axis=0)": (lib.jit(lambda v: v.sum(axis=0)), [x]),
        "layer, batch sharded": (layer, batch),
        "layer, contracting sharded": (layer, contracting),
        "tiny cached call": (lib.jit(lambda v: v + 1), [put("tiny", line, "x")]),
    }
    results = {}
    for name, (fn, args) in cases.items():
        timer = tiny_call_ms if name == "tiny cached call" else median_ms
        try:  # JAX 0.10 may refuse a contraction over a sharded axis without a hint
            results[name] = timer(lambda fn=fn, args=args: fn(*args).block_until_ready())
        except Exception as error:  # report whatever the library raised
            print(f"{lib.__name__}, {name}: {type(error).__name__}")
    return results


def spmd_times(data: dict) -> dict[str, float]:
    import spmd
    import spmd.numpy as snp
    from spmd import NamedSharding, P

    grid = spmd.make_mesh((2, 4), ("x", "y"))
    line = spmd.make_mesh((8,), ("x",))
    return times(spmd, snp, spmd.nn.sigmoid, NamedSharding, P, grid, line, data)


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
    return times(jax, jnp, jax.nn.sigmoid, NamedSharding, P, grid, line, data)


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
