"""How jit's costs grow with the mesh: the first call (trace, partition, plan, run) and a
steady call of ``(a @ a.T) @ a`` on a 256 x 256 float32 array sharded over both axes of a
near-square mesh of 8 to 4096 virtual devices.

Run: ``python benchmarks/mesh_size.py`` (one process per device count). The program is
small, so the times are spmd's own overhead: both should grow no faster than the devices.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

COUNTS = (8, 64, 256, 1024, 4096)


def measure_one() -> tuple[float, float]:
    """(first call, best steady call) in seconds, on this process's devices."""
    import numpy as np

    import spmd
    from spmd import NamedSharding, P

    count = spmd.device_count()
    rows = 2 ** (int(math.log2(count)) // 2)
    mesh = spmd.make_mesh((rows, count // rows), ("x", "y"))
    x = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
    a = spmd.device_put(x, NamedSharding(mesh, P("x", "y")))
    f = spmd.jit(lambda a: (a @ a.T) @ a)
    start = time.perf_counter()
    f(a).block_until_ready()
    first = time.perf_counter() - start
    steady = []
    for _ in range(5):
        start = time.perf_counter()
        f(a).block_until_ready()
        steady.append(time.perf_counter() - start)
    return first, min(steady)


def main() -> None:
    if len(sys.argv) > 1:
        print(*measure_one())
        return
    print(f"{'devices':>8} {'first call s':>13} {'steady call ms':>15}")
    for count in COUNTS:
        env = os.environ | {"SPMD_NUM_CPU_DEVICES": str(count)}
        command = [sys.executable, __file__, "--one"]
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        first, steady = map(float, done.stdout.split())
        print(f"{count:8d} {first:13.3f} {steady * 1e3:15.1f}")


if __name__ == "__main__":
    main()
