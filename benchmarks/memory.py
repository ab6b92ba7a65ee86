"""Peak memory of long elementwise chains: NumPy, spmd op by op, and spmd under jit.

Run: ``python benchmarks/memory.py`` (Linux). Each chain applies one step 20 times to a
4096 x 4096 float32 array (64 MiB), in spmd sharded P('x', 'y') over a 2 x 4 mesh. Each
number is the peak resident memory above what the process held before the call (the
input included), in MiB, measured in a fresh process after a warm-up call; glibc is told
to return freed blocks of 64 KiB and more to the system at once, so that memory freed by
one call is not reused silently by the next.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

STEPS = 20
CHAINS = {
    "where(x > 0, x, 0.1*x)": lambda m, v: m.where(v > 0, v, 0.1 * v),
    "x*sigmoid(x)": lambda m, v: v * (1 / (1 + m.exp(-v))),
    "sin(x.T)": lambda m, v: m.sin(v.T),
}
KINDS = ("numpy", "spmd eager", "spmd jit")


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _chain(m, step):
    def run(v):
        for _ in range(STEPS):
            v = step(m, v)
        return v

    return run


def measure_one(chain: str, kind: str) -> float:
    """Peak MiB above the start of one call of ``chain`` run as ``kind``."""
    x = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
    step = CHAINS[chain]
    if kind == "numpy":
        call = lambda: _chain(np, step)(x)  # noqa: E731
    else:
        import spmd
        import spmd.numpy as snp
        from spmd import NamedSharding, P

        mesh = spmd.make_mesh((2, 4), ("x", "y"))
        xs = spmd.device_put(x, NamedSharding(mesh, P("x", "y")))
        fn = _chain(snp, step) if kind == "spmd eager" else spmd.jit(_chain(snp, step))
        call = lambda: fn(xs).block_until_ready()  # noqa: E731
    call()
    start = _status_mib("VmRSS")
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak (VmHWM) starts again from here
    call()
    return _status_mib("VmHWM") - start


def main() -> None:
    if len(sys.argv) == 3:
        print(measure_one(sys.argv[1], sys.argv[2]))
        return
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536", "SPMD_NUM_CPU_DEVICES": "8"}
    print(f"peak MiB above the start, {STEPS} steps on 64 MiB")
    print(f"{'':24}" + "".join(f"{kind:>12}" for kind in KINDS) + f"{'jit/NumPy':>11}")
    for chain in CHAINS:
        peaks = {}
        for kind in KINDS:
            command = [sys.executable, __file__, chain, kind]
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            peaks[kind] = float(done.stdout.split()[-1])
        cells = "".join(f"{peaks[kind]:12.0f}" for kind in KINDS)
        print(f"{chain:24}{cells}{peaks['spmd jit'] / peaks['numpy']:11.2f}")


if __name__ == "__main__":
    main()
