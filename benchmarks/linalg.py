"""Batched ``linalg.solve`` and ``linalg.eigh``, batch-split, beside NumPy on the whole batch.

Run: ``python benchmarks/linalg.py`` (``--devices N``, 8 by default; ``--cores K``). A batch
of 512 matrices of 64x64 (float64 and float32) lies split by matrices over the devices, so
``spmd.jit(solve)`` and ``spmd.jit(eigh)`` run each device's matrices with no communication:
the run checks that ``explain()`` lists no collective, that none runs, and that the results
are NumPy's (eigh: eigenvalues, and A v = w v for the eigenvectors, whose signs are free).
NumPy computes the whole batch in one process. Each time is the median of 5 rounds after a
warm-up, the two taking turns; ``ratio`` is NumPy's time over spmd's (above 1: spmd is
faster).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from scaling import configure, cores

ARGS = configure()

import numpy as np  # noqa: E402  (after configure() set the device count)
from timing import interleaved_ms  # noqa: E402

import spmd  # noqa: E402
import spmd.numpy as snp  # noqa: E402
from spmd import NamedSharding, P  # noqa: E402
from spmd.debug import count_collectives  # noqa: E402

BATCH, N = 512, 64
TOLERANCE = {np.float64: 1e-9, np.float32: 2e-3}


def matrices(dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Well-conditioned general matrices, right-hand sides, and symmetric matrices."""
    rng = np.random.default_rng(0)
    general = rng.standard_normal((BATCH, N, N)) + N**0.5 * np.eye(N)
    rhs = rng.standard_normal((BATCH, N, 1))
    square = rng.standard_normal((BATCH, N, N))
    symmetric = (square + square.transpose(0, 2, 1)) / 2
    return general.astype(dtype), rhs.astype(dtype), symmetric.astype(dtype)


def ready(out) -> None:
    for leaf in spmd.tree_util.tree_leaves(out):
        leaf.block_until_ready()


def without_communication(function, *args) -> None:
    """``function`` (jitted) lowers to a program with no collective, and runs none."""
    text = function.lower(*args).explain()
    if "Collectives:\n  none" not in text:
        raise AssertionError(f"the batch-split call communicates:\n{text}")
    with count_collectives() as counts:
        ready(function(*args))
    if counts.total:
        raise AssertionError(f"the batch-split call ran collectives: {counts!r}")


def check_values(name, dtype, a, b, s, solve_out, eigh_out) -> None:
    tol = TOLERANCE[dtype]
    x = np.asarray(solve_out)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=tol, atol=tol, err_msg=name)
    w, v = (np.asarray(part) for part in eigh_out)
    scale = np.abs(np.linalg.eigvalsh(s)).max()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s), rtol=0, atol=tol * scale, err_msg=name)
    np.testing.assert_allclose(s @ v, v * w[:, None, :], rtol=0, atol=tol * scale, err_msg=name)
    assert x.dtype == w.dtype == v.dtype == dtype, (x.dtype, w.dtype, v.dtype)


def measure(dtype) -> dict[str, tuple[float, float]]:
    """Row name → (spmd ms, NumPy ms)."""
    a, b, s = matrices(dtype)
    mesh = spmd.make_mesh((ARGS.devices,), ("x",))
    split = NamedSharding(mesh, P("x"))
    sa, sb, ss = spmd.device_put((a, b, s), split)
    solve, eigh = spmd.jit(snp.linalg.solve), spmd.jit(snp.linalg.eigh)
    without_communication(solve, sa, sb)
    without_communication(eigh, ss)
    check_values(np.dtype(dtype).name, dtype, a, b, s, solve(sa, sb), eigh(ss))
    name = np.dtype(dtype).name
    solve_ms = interleaved_ms(
        {"spmd": lambda: ready(solve(sa, sb)), "numpy": lambda: np.linalg.solve(a, b)},
        rounds=5,
    )
    eigh_ms = interleaved_ms(
        {"spmd": lambda: ready(eigh(ss)), "numpy": lambda: np.linalg.eigh(s)}, rounds=5
    )
    return {
        f"solve {name}": (solve_ms["spmd"], solve_ms["numpy"]),
        f"eigh {name}": (eigh_ms["spmd"], eigh_ms["numpy"]),
    }


def main() -> None:
    rows = measure(np.float64) | measure(np.float32)
    print(f"{BATCH} matrices {N}x{N} split by matrices over {ARGS.devices} devices")
    print(f"{'':16} {'spmd ms':>10} {'numpy ms':>10} {'ratio':>8}")
    for name, (spmd_ms, numpy_ms) in rows.items():
        print(f"{name:16} {spmd_ms:10.2f} {numpy_ms:10.2f} {numpy_ms / spmd_ms:8.2f}")
    print(f"devices: {ARGS.devices}, cores: {cores()}; explain(): no collectives, none ran")


if __name__ == "__main__":
    main()
