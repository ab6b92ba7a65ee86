"""jit costs beside JAX: a fresh function's first result, and a cached call on a tiny input.

Run: ``python benchmarks/jit_overhead.py`` (JAX is timed too when it is installed).
"""

from __future__ import annotations

import os
import statistics
import time
import timeit

import numpy as np

REPEATS = 20


def first_result_ms(jit, numpy_module, x) -> float:
    """Median time from a brand-new function to its first result: trace, compile, run."""
    times = []
    for i in range(REPEATS):

        def fresh(v, i=i):  # a new function object each time, so no cache can help
            return 2 * numpy_module.sin(v) + i

        start = time.perf_counter()
        np.asarray(jit(fresh)(x))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def cached_call_us(jit, numpy_module, x) -> float:
    f = jit(lambda v: 2 * numpy_module.sin(v) + 1)
    f(x)

    def run():
        return f(x).block_until_ready()

    number = 2000
    return min(timeit.repeat(run, number=number, repeat=5)) / number * 1e6


def main() -> None:
    import spmd
    import spmd.numpy as snp

    x = np.arange(8, dtype=np.float32)
    rows = {"spmd": (first_result_ms(spmd.jit, snp, x), cached_call_us(spmd.jit, snp, x))}
    try:
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
        import jax
        import jax.numpy as jnp

        xj = jnp.asarray(x)
        rows["jax"] = (first_result_ms(jax.jit, jnp, xj), cached_call_us(jax.jit, jnp, xj))
    except ImportError:
        pass
    print(f"{'':6} {'first result ms':>16} {'cached call us':>15}")
    for name, (first, call) in rows.items():
        print(f"{name:6} {first:16.3f} {call:15.2f}")
    if "jax" in rows:
        (f1, c1), (f2, c2) = rows["spmd"], rows["jax"]
        print(f"JAX/spmd: first result {f2 / f1:.1f}x, cached call {c2 / c1:.2f}x (>1: spmd ahead)")


if __name__ == "__main__":
    main()
