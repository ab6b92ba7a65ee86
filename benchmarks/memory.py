"""Peak memory of long elementwise chains: NumPy, spmd op by op, and spmd under jit.

Run: ``python benchmarks/memory.py`` (Linux). Each chain applies one step 20 times to a
4096 x 4096 float32 array (64 MiB), or runs benchmarks/auto_parallel.py's 10-step chain once
(where, exp, *, +, tanh: one fused kernel per device under jit), in spmd sharded
P('x', 'y') over a 2 x 4 mesh. Each
number is the peak resident memory above what the process held before the call (the
input included), in MiB, measured in a fresh process after a warm-up call; glibc is told
to return freed blocks of 64 KiB and more to the system at once, and spmd's buffer pool is
off, so that memory freed by one call is not reused silently by the next.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np

STEPS = 20


def _repeated(step):
    def run(m, v):
        for _ in range(STEPS):
            v = step(m, v)
        return v

    return run


def chain(m, v):
    """benchmarks/auto_parallel.py's 10-step chain."""
    a = m.where(v > 0, v, v * 0.1)
    b = m.exp(a * -0.5)
    c = m.tanh(b * v + 1.0)
    return m.where(c > 0.5, c, b)


CHAINS = {
    "where(x > 0, x, 0.1*x)": _repeated(lambda m, v: m.where(v > 0, v, 0.1 * v)),
    "x*sigmoid(x)": _repeated(lambda m, v: v * (1 / (1 + m.exp(-v)))),
    "sin(x.T)": _repeated(lambda m, v: m.sin(v.T)),
    "10-step chain, once": chain,
}
KINDS = ("numpy", "spmd eager", "spmd jit")


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure_one(name: str, kind: str) -> float:
    """Peak MiB above the start of one call of chain ``name`` run as ``kind``."""
    x = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
    run = CHAINS[name]
    if kind == "numpy":
        call = lambda: run(np, x)  # noqa: E731
    else:
        import spmd
        import spmd.numpy as snp
        from spmd import NamedSharding, P

        mesh = spmd.make_mesh((2, 4), ("x", "y"))
        xs = spmd.device_put(x, NamedSharding(mesh, P("x", "y")))
        fn = functools.partial(run, snp)
        fn = fn if kind == "spmd eager" else spmd.jit(fn)
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
    # no buffer pool either (spmd/core/buffer_pool.py): the warm-up's freed results would
    # hold the measured call's, as they do in a loop (the pool holds at most kept_memory)
    env = os.environ | {
        "MALLOC_MMAP_THRESHOLD_": "65536",
        "SPMD_NUM_CPU_DEVICES": "8",
        "SPMD_KEPT_MEMORY": "0",
    }
    print("peak MiB above the start, on 64 MiB")
    print(f"{'':24}" + "".join(f"{kind:>12}" for kind in KINDS) + f"{'jit/NumPy':>11}")
    for name in CHAINS:
        peaks = {}
        for kind in KINDS:
            command = [sys.executable, __file__, name, kind]
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            peaks[kind] = float(done.stdout.split()[-1])
        cells = "".join(f"{peaks[kind]:12.0f}" for kind in KINDS)
        print(f"{name:24}{cells}{peaks['spmd jit'] / peaks['numpy']:11.2f}")


if __name__ == "__main__":
    main()
