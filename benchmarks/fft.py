"""A batch-split fft beside NumPy's on the whole batch.

Run: ``python benchmarks/fft.py`` (``--devices N``, 8 by default; ``--cores K``). The
(64, 65536) complex64 batch lies split by rows over the devices, so ``spmd.jit(fft)`` runs
each device's rows with no communication; NumPy transforms the whole batch in one process.
Each time is the median of 5 rounds after a warm-up, the two taking turns; ``ratio`` is
NumPy's time over spmd's (above 1: spmd is faster).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure

ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

import spmd  # noqa: E402
import spmd.numpy as snp  # noqa: E402
from spmd import NamedSharding, P  # noqa: E402

SHAPE = (64, 65536)


def main() -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(SHAPE) + 1j * rng.standard_normal(SHAPE)).astype(np.complex64)
    mesh = spmd.make_mesh((ARGS.devices,), ("x",))
    rows = spmd.device_put(x, NamedSharding(mesh, P("x")))
    transform = spmd.jit(snp.fft.fft)
    np.testing.assert_allclose(
        np.asarray(transform(rows)), np.fft.fft(x), rtol=1e-3, atol=1e-2 * np.sqrt(SHAPE[1])
    )
    times = interleaved_ms(
        {
            "spmd": lambda: transform(rows).block_until_ready(),
            "numpy": lambda: np.fft.fft(x),
        },
        rounds=5,
    )
    spmd_ms, numpy_ms = times["spmd"], times["numpy"]
    print(f"fft of a row-split complex64{list(SHAPE)} on {ARGS.devices} devices")
    print(f"{'spmd ms':>10} {'numpy ms':>10} {'ratio':>8}")
    print(f"{spmd_ms:10.2f} {numpy_ms:10.2f} {numpy_ms / spmd_ms:8.2f}")


if __name__ == "__main__":
    main()
