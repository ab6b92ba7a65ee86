"""spmd.lax.linalg's qr, svd, eigh, lu, lu_pivots_to_permutation and tridiagonal_solve against
NumPy and SciPy (LAPACK's own factors: scipy.linalg.lu_factor's pivots, solve_banded), in
JAX's signatures and result orders; eagerly, under jit, on batches split over 8 devices;
derivatives against central differences; and the errors. (cholesky's and triangular_solve's
values, and rows of all of them for the partition, derivative and vmap oracles, are in the
case table: tests/cases/linalg.py and tests/cases/lax_linalg.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import spmd
from spmd import NamedSharding, ShapeError, SpmdTypeError, SpmdValueError
from spmd import PartitionSpec as P
from spmd.lax import linalg
from spmd.test_util import check_grads

RNG = np.random.default_rng(31)
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}
DTYPES = list(TOL)


def random(shape, dtype) -> np.ndarray:
    x = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.normal(size=shape)
    return x.astype(dtype)


def close(got, want, tol) -> None:
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def run(jitted: bool):
    return spmd.jit if jitted else (lambda f: f)


def each_matrix(fn, x: np.ndarray, *rest: np.ndarray) -> list:
    """``fn`` on each matrix of a stack (and the matching matrices of ``rest``)."""
    batch = x.shape[:-2]
    return [fn(x[i], *(r[i] for r in rest)) for i in np.ndindex(*batch)]


def adjoint(x):
    return np.conjugate(np.swapaxes(np.asarray(x), -1, -2))


# --- qr, svd, eigh ---------------------------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_qr_matches_numpy_in_both_sizes(dtype, jitted):
    for shape in ((2, 5, 3), (3, 5), (0, 4, 4)):
        x = random(shape, dtype)
        for full in (True, False):
            q, r = run(jitted)(lambda a, f=full: linalg.qr(a, full_matrices=f))(x)
            want_q, want_r = np.linalg.qr(x, mode="complete" if full else "reduced")
            assert (q.dtype, q.shape, r.shape) == (want_q.dtype, want_q.shape, want_r.shape)
            close(q, want_q, TOL[dtype] * 10)  # one LAPACK routine: one sign convention
            close(r, want_r, TOL[dtype] * 10)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_returns_u_s_vh_and_subsets(dtype, jitted):
    x = random((2, 5, 3), dtype)
    u, s, vh = run(jitted)(linalg.svd)(x)
    want_u, want_s, want_vh = np.linalg.svd(x)
    assert (u.shape, s.shape, vh.shape) == (want_u.shape, want_s.shape, want_vh.shape)
    assert s.dtype == want_s.dtype
    close(s, want_s, TOL[dtype] * 10)
    rebuilt = np.asarray(u)[..., :3] * np.asarray(s)[..., None, :] @ np.asarray(vh)
    close(rebuilt, x, TOL[dtype] * 10)
    close(run(jitted)(lambda a: linalg.svd(a, compute_uv=False))(x), want_s, TOL[dtype] * 10)
    u2, s2, vh2 = run(jitted)(lambda a: linalg.svd(a, full_matrices=False, subset_by_index=(1, 3)))(
        x
    )
    assert (u2.shape, s2.shape, vh2.shape) == ((2, 5, 2), (2, 2), (2, 2, 3))
    close(s2, want_s[..., 1:3], TOL[dtype] * 10)
    for k in range(2):  # each kept singular pair is one of x's: x v = s u
        v = adjoint(np.asarray(vh2))[..., k]
        close(np.einsum("bij,bj->bi", x, v), np.asarray(s2)[:, k, None] * np.asarray(u2)[..., k],
              TOL[dtype] * 10)  # fmt: skip
    values = linalg.svd(x, full_matrices=False, compute_uv=False, subset_by_index=(0, 1))
    close(values, want_s[..., :1], TOL[dtype] * 10)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_gives_eigenvectors_first(dtype, jitted):
    x = random((3, 4, 4), dtype)
    hermitian = (x + adjoint(x)) / 2
    v, w = run(jitted)(linalg.eigh)(x)  # symmetrize_input: (x + xᴴ) / 2
    want_w, want_v = np.linalg.eigh(hermitian)
    assert (v.shape, w.shape, v.dtype, w.dtype) == (
        want_v.shape, want_w.shape, want_v.dtype, want_w.dtype)  # fmt: skip
    close(w, want_w, TOL[dtype] * 10)
    v = np.asarray(v)
    close(hermitian @ v, v * np.asarray(w)[..., None, :], TOL[dtype] * 100)
    for lower in (True, False):  # without symmetrizing only one triangle is read
        f = run(jitted)(lambda a, lo=lower: linalg.eigh(a, lower=lo, symmetrize_input=False))
        _, w = f(x)
        close(w, np.linalg.eigvalsh(x, UPLO="L" if lower else "U"), TOL[dtype] * 10)
    v2, w2 = run(jitted)(lambda a: linalg.eigh(a, subset_by_index=(2, 4)))(x)
    assert (v2.shape, w2.shape) == ((3, 4, 2), (3, 2))
    close(w2, want_w[..., 2:], TOL[dtype] * 10)


# --- lu --------------------------------------------------------------------------------------


def scipy_lu(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy.linalg.lu_factor (LAPACK's getrf) of each matrix: the factors and pivots."""
    m, n = x.shape[-2:]
    if x.size == 0:
        return x.copy(), np.zeros((*x.shape[:-2], min(m, n)), np.int32)
    parts = each_matrix(scipy.linalg.lu_factor, x)
    factors = np.stack([f for f, _ in parts]).reshape(x.shape)
    pivots = np.stack([p for _, p in parts]).reshape(*x.shape[:-2], min(m, n))
    return factors, pivots


def permutation_of(pivots: np.ndarray, m: int) -> np.ndarray:
    """The rows the swaps ``pivots`` bring to the front, by a loop of swaps."""
    out = np.empty((*pivots.shape[:-1], m), np.int32)
    for index in np.ndindex(*pivots.shape[:-1]):
        order = list(range(m))
        for k, p in enumerate(pivots[index]):
            order[k], order[p] = order[p], order[k]
        out[index] = order
    return out


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 3), (2, 3, 5), (0, 3, 3), (4, 0), (1, 1)])
def test_lu_matches_lapack_getrf(shape, dtype, jitted):
    x = random(shape, dtype)
    lu, pivots, permutation = run(jitted)(linalg.lu)(x)
    want_lu, want_pivots = scipy_lu(x)
    assert (lu.dtype, lu.shape) == (np.dtype(dtype), x.shape)
    assert (pivots.dtype, permutation.dtype) == (np.int32, np.int32)
    np.testing.assert_array_equal(pivots, want_pivots)
    close(lu, want_lu, TOL[dtype] * 10)
    m, n = shape[-2:]
    np.testing.assert_array_equal(permutation, permutation_of(want_pivots, m))
    k = min(m, n)
    lower = np.tril(np.asarray(lu), -1)[..., :, :k] + np.eye(m, k, dtype=dtype)
    upper = np.triu(np.asarray(lu))[..., :k, :]
    rows = np.take_along_axis(x, np.asarray(permutation)[..., None], axis=-2)
    close(lower @ upper, rows, TOL[dtype] * 10)


def test_lu_pivots_on_complex_magnitude_as_lapack_and_skips_a_zero_column():
    x = np.array([[1 + 0j, 2, 0], [0.9 + 0.9j, 1, 1], [1.5 + 0j, 0, 2]])  # |re| + |im|: row 1
    lu, pivots, _ = linalg.lu(x)
    np.testing.assert_array_equal(pivots, scipy.linalg.lu_factor(x)[1])
    assert int(np.asarray(pivots)[0]) == 1  # the largest modulus, 1.5, is row 2's
    singular = np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 1.0], [0.0, 2.0, 5.0]])
    lu, pivots, _ = linalg.lu(singular)
    want_lu, want_pivots = scipy.linalg.lu_factor(singular, check_finite=False)
    np.testing.assert_array_equal(pivots, want_pivots)
    close(lu, want_lu, 1e-12)  # no NaN: the zero pivot's column stays as it is
    assert np.isfinite(np.asarray(lu)).all()


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_lu_on_a_batch_split_over_eight_devices(jitted):
    x = random((8, 4, 4), np.float64)
    mesh = spmd.make_mesh((8,), ("b",))
    placed = spmd.device_put(x, NamedSharding(mesh, P("b")))
    lu, pivots, _ = run(jitted)(linalg.lu)(placed)
    want_lu, want_pivots = scipy_lu(x)
    close(lu, want_lu, 1e-12)
    np.testing.assert_array_equal(pivots, want_pivots)
    assert lu.sharding.spec.dims(3)[0] == ("b",)


def test_lu_derivatives_match_finite_differences():
    x = random((2, 4, 3), np.float64) + 3 * np.eye(4, 3)
    check_grads(lambda a: linalg.lu(a)[0], (x,), order=1)
    check_grads(lambda a: linalg.lu(a)[0], (random((3, 3), np.complex128),), order=1,
                modes=("fwd",))  # fmt: skip


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_lu_pivots_to_permutation_matches_a_loop_of_swaps(jitted):
    pivots = np.array([[2, 2, 3], [0, 3, 2], [1, 1, 2]], np.int32)
    for size in (4, 6):
        got = run(jitted)(lambda p, s=size: linalg.lu_pivots_to_permutation(p, s))(pivots)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, permutation_of(pivots, size))
    empty = linalg.lu_pivots_to_permutation(np.zeros((2, 0), np.int64), 3)
    np.testing.assert_array_equal(empty, np.tile(np.arange(3, dtype=np.int32), (2, 1)))


# --- tridiagonal_solve ------------------------------------------------------------------------


def banded_solve(dl, d, du, b) -> np.ndarray:
    """scipy.linalg.solve_banded on each system (dl[0] and du[-1] unused)."""

    def one(dl, d, du, b):
        bands = np.zeros((3, d.shape[-1]), np.result_type(d, b))
        bands[0, 1:], bands[1], bands[2, :-1] = du[:-1], d, dl[1:]
        return scipy.linalg.solve_banded((1, 1), bands, b)

    flat = [v.reshape(-1, *v.shape[-1:]) for v in (dl, d, du)]
    rhs = b.reshape(-1, *b.shape[-2:])
    return np.stack([one(*(f[i] for f in flat), rhs[i]) for i in range(len(rhs))]).reshape(b.shape)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_solve_matches_scipy_solve_banded(dtype, jitted):
    shape = (3, 5)
    dl, d, du = random(shape, dtype), random(shape, dtype) + 4, random(shape, dtype)
    dl[..., 0] = np.nan  # unused: dl[0] and du[m - 1] are outside the matrix
    du[..., -1] = np.nan
    b = random((*shape, 2), dtype)
    got = run(jitted)(linalg.tridiagonal_solve)(dl, d, du, b)
    assert got.dtype == np.dtype(dtype)
    close(got, banded_solve(dl, d, du, b), TOL[dtype] * 10)
    one = run(jitted)(linalg.tridiagonal_solve)(*(v[:1, :1] for v in (dl, d, du)), b[:1, :1])
    close(one, b[:1, :1] / d[:1, :1, None], TOL[dtype])


def test_tridiagonal_solve_derivatives_match_finite_differences():
    dl, d, du, b = random((4,), np.float64), random((4,), np.float64) + 4, \
        random((4,), np.float64), random((4, 2), np.float64)  # fmt: skip
    check_grads(linalg.tridiagonal_solve, (dl, d, du, b), order=1)


# --- errors ----------------------------------------------------------------------------------


def test_bad_arguments_raise_errors_that_name_them():
    square = np.eye(3)
    with pytest.raises(SpmdValueError, match="pivoting=True"):
        linalg.qr(square, pivoting=True)
    with pytest.raises(ShapeError, match="x has shape"):
        linalg.qr(np.ones(3))
    with pytest.raises(ShapeError, match="square"):
        linalg.eigh(np.ones((2, 3)))
    with pytest.raises(SpmdValueError, match="full_matrices=False"):
        linalg.svd(square, subset_by_index=(0, 1))
    with pytest.raises(SpmdValueError, match=r"0 <= start <= end <= 3"):
        linalg.svd(square, full_matrices=False, subset_by_index=(2, 5))
    with pytest.raises(SpmdTypeError, match="subset_by_index"):
        linalg.eigh(square, subset_by_index=1)
    with pytest.raises(SpmdValueError, match="algorithm"):
        linalg.svd(square, algorithm="jacobi")
    with pytest.raises(SpmdTypeError, match="float16"):
        linalg.lu(np.eye(2, dtype=np.float16))
    with pytest.raises(SpmdTypeError, match="integers"):
        linalg.lu_pivots_to_permutation(np.zeros(2), 3)
    with pytest.raises(SpmdValueError, match="permutation_size=1"):
        linalg.lu_pivots_to_permutation(np.zeros(2, np.int32), 1)
    with pytest.raises(ShapeError, match="at least one dimension"):
        linalg.lu_pivots_to_permutation(np.int32(0), 1)
    v = np.ones(3)
    with pytest.raises(ShapeError, match="one shape"):
        linalg.tridiagonal_solve(v[:2], v, v, np.ones((3, 1)))
    with pytest.raises(ShapeError, match="b must have shape"):
        linalg.tridiagonal_solve(v, v, v, np.ones(3))
    with pytest.raises(SpmdTypeError, match="one dtype"):
        linalg.tridiagonal_solve(v.astype(np.float32), v, v, np.ones((3, 1)))
    with pytest.raises(SpmdValueError, match="perturb_singular"):
        linalg.tridiagonal_solve(v, v, v, np.ones((3, 1)), perturb_singular=True)
