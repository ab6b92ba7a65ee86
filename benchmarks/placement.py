"""Placement speed: device_put, resharding and gathering, beside NumPy copying the same bytes.

Run: ``python benchmarks/placement.py`` (add ``--jax`` to time JAX too when it is installed;
JAX gets 8 host devices through XLA_FLAGS, set before it is imported).
"""

from __future__ import annotations

import argparse
import os
import timeit

import numpy as np


def best(fn, repeat: int = 7) -> float:
    fn()
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def spmd_times(x: np.ndarray) -> dict[str, float]:
    import spmd
    from spmd import NamedSharding, P

    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    xy, yx, rep = (NamedSharding(mesh, s) for s in (P("x", "y"), P("y", "x"), P()))
    a = spmd.device_put(x, xy)
    return {
        "device_put P('x','y')": best(lambda: spmd.device_put(x, xy)),
        "reshard P('x','y') -> P('y','x')": best(lambda: spmd.device_put(a, yx)),
        "reshard P('x','y') -> P()": best(lambda: spmd.device_put(a, rep)),
        "gather to NumPy": best(lambda: np.asarray(spmd.device_put(x, xy)))
        - best(lambda: spmd.device_put(x, xy)),
    }


def jax_times(x: np.ndarray) -> dict[str, float]:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("x", "y"))
    xy, yx, rep = (NamedSharding(mesh, s) for s in (P("x", "y"), P("y", "x"), P()))
    a = jax.device_put(x, xy).block_until_ready()
    return {
        "device_put P('x','y')": best(lambda: jax.device_put(x, xy).block_until_ready()),
        "reshard P('x','y') -> P('y','x')": best(lambda: jax.device_put(a, yx).block_until_ready()),
        "reshard P('x','y') -> P()": best(lambda: jax.device_put(a, rep).block_until_ready()),
        "gather to NumPy": best(lambda: np.asarray(jax.device_put(x, xy)))
        - best(lambda: jax.device_put(x, xy).block_until_ready()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--jax", action="store_true", help="also time JAX (if installed)")
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((args.size, args.size), dtype=np.float32)
    copy = best(lambda: x.copy())
    ours = spmd_times(x)
    theirs = jax_times(x) if args.jax else {}
    print(f"float32[{args.size},{args.size}] ({x.nbytes / 2**20:.0f} MiB) on a 2x4 mesh")
    print(f"NumPy x.copy(): {copy * 1e3:.2f} ms")
    header = f"{'operation':34} {'spmd ms':>9} {'÷ copy':>7}"
    print(header + (f" {'JAX ms':>9} {'spmd/JAX':>9}" if theirs else ""))
    for name, t in ours.items():
        row = f"{name:34} {t * 1e3:9.2f} {t / copy:7.2f}"
        if name in theirs:
            row += f" {theirs[name] * 1e3:9.2f} {t / theirs[name]:9.2f}"
        print(row)


if __name__ == "__main__":
    main()
