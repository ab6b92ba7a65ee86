"""spmd.lax.linalg's eig, schur, hessenberg and householder_product, spmd.numpy.linalg's eig
and eigvals, and spmd.scipy.linalg's schur, hessenberg and expm by the properties that define
them (each matrix checked by NumPy, batched, float32 and complex included): ``A V = V diag(w)``
and ``Vlᴴ A = diag(w) Vlᴴ`` with LAPACK's normalization, ``Q T Qᴴ = A`` with Q unitary and T
(quasi-)triangular, H from hessenberg's packed form reconstructing A, expm's identities. Also
NaN for matrices holding inf or NaN, which derivatives exist and the errors that say how to do
without the others, and batches split over devices computing with no collective. The case
table's rows (tests/cases/linalg_eig.py, linalg_scipy.py) compare values with NumPy and SciPy.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import spmd
import spmd.numpy as snp
import spmd.scipy.linalg
from spmd import NamedSharding, ShapeError, SpmdTypeError, SpmdValueError
from spmd import PartitionSpec as P

RNG = np.random.default_rng(11)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
TOL = {np.float32: 2e-4, np.float64: 1e-10, np.complex64: 2e-4, np.complex128: 1e-10}


def random(shape, dtype):
    x = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.normal(size=shape)
    return x.astype(dtype)


def adjoint(x):
    return np.conjugate(np.swapaxes(x, -1, -2))


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def complex_of(dtype):
    return np.result_type(dtype, np.complex64)


# --- eig ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_eig_vectors_satisfy_their_equations_with_lapack_normalization(dtype, batch):
    a = random((*batch, 5, 5), dtype)  # real ones have complex conjugate pairs
    w, vl, vr = spmd.lax.linalg.eig(a)
    w, vl, vr = np.asarray(w), np.asarray(vl), np.asarray(vr)
    assert w.dtype == vl.dtype == vr.dtype == complex_of(dtype)
    assert w.shape == (*batch, 5) and vr.shape == vl.shape == (*batch, 5, 5)
    tol = TOL[dtype] * 10
    close(a @ vr, vr * w[..., None, :], tol)
    close(adjoint(vl) @ a, w[..., :, None] * adjoint(vl), tol)
    for v in (vl, vr):
        close(np.linalg.norm(v, axis=-2), np.ones((*batch, 5)), tol)
        largest = np.take_along_axis(v, np.abs(v).argmax(axis=-2)[..., None, :], axis=-2)
        close(largest.imag, np.zeros_like(largest.imag), tol)
    if np.dtype(dtype).kind == "f":  # a real matrix: eigenvalues in conjugate pairs
        close(np.sort_complex(w.reshape(-1, 5)), np.sort_complex(w.conj().reshape(-1, 5)), tol)


def test_numpy_eig_and_eigvals_are_always_complex_and_match_lax():
    a = np.array([[2.0, 1.0], [1.0, 2.0]])  # real eigenvalues: NumPy's results are real
    w, v = snp.linalg.eig(a)
    assert w.dtype == v.dtype == np.complex128
    assert snp.linalg.eigvals(a.astype(np.float32)).dtype == np.complex64
    close(np.sort(np.asarray(w).real), [1.0, 3.0], 1e-12)
    close(snp.linalg.eigvals(a), np.asarray(w), 0)
    assert snp.linalg.eig(np.eye(3, dtype=np.int32)).eigenvalues.dtype == np.complex128


def test_eig_of_a_matrix_with_inf_or_nan_is_nan_for_that_matrix_alone():
    a = random((3, 4, 4), np.float64)
    a[1, 2, 0] = np.inf
    a[2, 0, 0] = np.nan
    for result in spmd.lax.linalg.eig(a):
        result = np.asarray(result)
        assert np.isnan(result[1:]).all()
        assert np.isfinite(result[0]).all()
    schur_form, vectors = spmd.lax.linalg.schur(a)
    packed, taus = spmd.lax.linalg.hessenberg(a)
    for result in (schur_form, vectors, packed, taus):
        assert np.isnan(np.asarray(result)[1:]).all() and np.isfinite(np.asarray(result)[0]).all()


@pytest.mark.parametrize("n", [0, 1])
def test_eig_schur_and_hessenberg_of_empty_and_1x1_matrices(n):
    a = np.full((2, n, n), 3.0)
    w, _, vr = spmd.lax.linalg.eig(a)
    assert np.asarray(w).shape == (2, n) and np.asarray(vr).shape == (2, n, n)
    close(w, np.full((2, n), 3.0 + 0j), 0)
    close(vr, np.ones((2, n, n)), 0)
    t, _ = spmd.lax.linalg.schur(a)
    close(t, a, 0)
    packed, taus = spmd.lax.linalg.hessenberg(a)
    assert np.asarray(taus).shape == (2, 0)
    close(packed, a, 0)


def test_eigenvalue_derivatives_match_finite_differences_and_vjp():
    a = random((2, 4, 4), np.float64)
    t = random((2, 4, 4), np.float64)

    def f(x):
        return snp.linalg.eigvals(x)

    _, dw = spmd.jvp(f, (a,), (t,))
    eps = 1e-6
    want = (np.linalg.eigvals(a + eps * t) - np.linalg.eigvals(a - eps * t)) / (2 * eps)
    close(dw, want, 1e-6)  # (LAPACK's eigenvalue order holds for so small a step)
    grad = spmd.grad(lambda x: snp.sum(snp.real(f(x)) ** 2 + snp.imag(f(x))))(a)

    def loss(x):
        w = np.linalg.eigvals(x)
        return np.sum(w.real**2 + w.imag)

    step = (loss(a + eps * t) - loss(a - eps * t)) / (2 * eps)
    close(np.sum(np.asarray(grad) * t), step, 1e-5)


def test_eigenvector_derivatives_need_the_opt_in_as_in_jax():
    a = random((3, 3), np.float64)
    with pytest.raises(SpmdTypeError, match="enable_eigvec_derivs=True"):
        spmd.jvp(lambda x: snp.linalg.eig(x).eigenvectors, (a,), (a,))
    with pytest.raises(SpmdTypeError, match="enable_eigvec_derivs=True"):
        spmd.grad(lambda x: snp.sum(snp.real(spmd.lax.linalg.eig(x)[0])))(a)
    for name in ("schur", "hessenberg"):
        with pytest.raises(SpmdTypeError, match="stop_gradient"):
            spmd.grad(lambda x, name=name: snp.sum(getattr(spmd.lax.linalg, name)(x)[0]))(a)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigenvector_derivatives_with_the_opt_in_match_finite_differences(dtype):
    a = random((2, 4, 4), dtype)
    t = random((2, 4, 4), dtype)

    def f(x):
        return spmd.lax.linalg.eig(x, enable_eigvec_derivs=True)

    _, tangents = spmd.jvp(f, (a,), (t,))
    eps = 1e-6

    def lapack(x):
        found = [scipy.linalg.eig(m, left=True, right=True) for m in x]
        return [np.stack(parts) for parts in zip(*found, strict=True)]

    plus, minus = lapack(a + eps * t), lapack(a - eps * t)
    for got, p, m in zip(tangents, plus, minus, strict=True):
        close(got, (p - m) / (2 * eps), 1e-6)


# --- schur, hessenberg, householder_product ------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_schur_vectors_are_unitary_and_reconstruct_a_quasi_triangular_form(dtype):
    a = random((3, 5, 5), dtype)
    t, q = (np.asarray(r) for r in spmd.lax.linalg.schur(a))
    tol = TOL[dtype] * 10
    close(q @ t @ adjoint(q), a, tol)
    close(adjoint(q) @ q, np.broadcast_to(np.eye(5), q.shape), tol)
    below = np.tril(t, -2) if np.dtype(dtype).kind == "f" else np.tril(t, -1)
    assert not below.any()
    if np.dtype(dtype).kind == "f":  # 2x2 blocks: no two subdiagonal entries in a row
        sub = np.diagonal(t, offset=-1, axis1=-2, axis2=-1) != 0
        assert not (sub[..., 1:] & sub[..., :-1]).any()
    (alone,) = spmd.lax.linalg.schur(a, compute_schur_vectors=False)
    close(alone, t, 0)


def test_schur_of_integers_is_the_float64_schur_form():
    a = RNG.integers(-5, 6, size=(4, 4))
    t, q = spmd.scipy.linalg.schur(a)
    want_t, want_q = scipy.linalg.schur(a.astype(np.float64))
    assert np.asarray(t).dtype == np.float64
    close(t, want_t, 0)
    close(q, want_q, 0)
    t, q = spmd.scipy.linalg.schur(a, output="complex")
    assert np.asarray(t).dtype == np.complex128
    assert not np.tril(np.asarray(t), -1).any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_hessenberg_packed_form_reconstructs_a(dtype, n):
    a = random((3, n, n), dtype)
    packed, taus = spmd.lax.linalg.hessenberg(a)
    assert np.asarray(taus).shape == (3, n - 1)
    h = np.triu(np.asarray(packed), -1)
    inner = np.asarray(spmd.lax.linalg.householder_product(packed[..., 1:, :-1], taus))
    q = np.zeros_like(a)
    q[..., 0, 0] = 1
    q[..., 1:, 1:] = inner
    tol = TOL[dtype] * 10
    close(q @ h @ adjoint(q), a, tol)
    close(adjoint(q) @ q, np.broadcast_to(np.eye(n), q.shape), tol)
    h2, q2 = spmd.scipy.linalg.hessenberg(a, calc_q=True)
    close(h2, h, 0)
    close(q2, q, tol)
    close(spmd.scipy.linalg.hessenberg(a), h, 0)


def test_householder_product_of_qr_reflectors_is_q():
    a = random((2, 5, 3), np.float64)
    for m in a:
        (packed, taus), _ = scipy.linalg.qr(m, mode="raw")
        q = spmd.lax.linalg.householder_product(packed, taus)
        close(q, scipy.linalg.qr(m, mode="economic")[0], 1e-12)


# --- expm ---------------------------------------------------------------------------------------


def test_expm_identities_per_matrix_squarings_and_nan_beyond_max_squarings():
    a = random((4, 4), np.float64)
    expm = spmd.scipy.linalg.expm
    close(expm(np.zeros((2, 3, 3))), np.broadcast_to(np.eye(3), (2, 3, 3)), 0)
    close(expm(np.diag([1.0, -2.0])), np.diag(np.exp([1.0, -2.0])), 1e-14)
    close(np.asarray(expm(a)) @ np.asarray(expm(-a)), np.eye(4), 1e-10)
    rotation = np.zeros((4, 4))
    rotation[0, 1], rotation[1, 0] = 1e6, -1e6  # a rotation: 17 squarings, exp stays bounded
    stack = np.stack([a / 100, a * 5, rotation])  # no squaring, some, too many
    got = np.asarray(expm(stack))
    close(got[:2], np.stack([scipy.linalg.expm(m) for m in stack[:2]]), 1e-10)
    assert np.isnan(got[2]).all()
    assert np.isfinite(np.asarray(expm(stack, max_squarings=17))).all()
    close(expm(a.astype(np.float32)), scipy.linalg.expm(a).astype(np.float32), 1e-4)


def test_expm_gradient_matches_finite_differences():
    a = random((3, 3), np.float64) * 2
    t = random((3, 3), np.float64)
    _, got = spmd.jvp(spmd.scipy.linalg.expm, (a,), (t,))
    eps = 1e-6
    want = (scipy.linalg.expm(a + eps * t) - scipy.linalg.expm(a - eps * t)) / (2 * eps)
    close(got, want, 1e-6)
    frechet = scipy.linalg.expm_frechet(a, t, compute_expm=False)
    close(got, frechet, 1e-9)


# --- sharding, vmap, errors ------------------------------------------------------------------


@pytest.mark.parametrize("batch", [13, 3])  # uneven; and 5 of the 8 blocks empty
def test_a_batch_split_on_x_runs_with_no_collective(batch):
    mesh = spmd.make_mesh((8,), ("x",))
    a = spmd.device_put(random((batch, 4, 4), np.float64), NamedSharding(mesh, P("x")))

    def f(a):
        w, vl, vr = spmd.lax.linalg.eig(a)
        t, q = spmd.lax.linalg.schur(a)
        packed, taus = spmd.lax.linalg.hessenberg(a)
        return w, vl, vr, t, q, packed, taus, spmd.scipy.linalg.expm(a)

    explained = spmd.jit(f).lower(a).explain()
    assert "none: every operand already lies where its equation runs" in explained, explained
    got = spmd.jit(f)(a)
    want = f(np.asarray(a))
    for g, w in zip(got, want, strict=True):
        assert g.sharding.spec == P("x")
        close(g, np.asarray(w), 0)


def test_a_split_matrix_dimension_is_gathered():
    mesh = spmd.make_mesh((4,), ("x",))
    a = random((8, 8), np.float64)
    split = spmd.device_put(a, NamedSharding(mesh, P(None, "x")))
    w = spmd.jit(lambda x: snp.linalg.eigvals(x))(split)
    close(w, np.linalg.eigvals(a), 1e-12)


def test_vmap_of_eig_schur_and_hessenberg_matches_a_loop():
    a = random((3, 4, 4), np.float64)
    for fn in (spmd.lax.linalg.eig, spmd.lax.linalg.schur, spmd.lax.linalg.hessenberg):
        got = spmd.vmap(fn)(a)
        want = [fn(m) for m in a]
        for k, g in enumerate(got):
            close(g, np.stack([np.asarray(w[k]) for w in want]), 0)


class _Unexportable:
    """An array of a namespace whose arrays cannot go to NumPy (no DLPack)."""

    shape, ndim, device = (2, 2), 2, None


class _Namespace:
    __name__ = "unexportable_arrays"


@pytest.mark.parametrize("primitive", ["eig", "schur", "hessenberg"])
def test_a_namespace_without_the_routine_or_a_way_to_the_host_is_named(primitive):
    from spmd.core.primitive import primitive_named

    params = {
        "eig": {"compute_left_eigenvectors": True, "compute_right_eigenvectors": True,
                "enable_eigvec_derivs": False},
        "schur": {"compute_schur_vectors": True},
        "hessenberg": {},
    }[primitive]  # fmt: skip
    impl = primitive_named(primitive).rules.impl
    with pytest.raises(SpmdTypeError, match=r"unexportable_arrays.*SPMD_BACKEND"):
        impl(_Namespace(), _Unexportable(), **params)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: spmd.lax.linalg.eig(np.ones((2, 3))), ShapeError, "square"),
        (lambda: spmd.lax.linalg.schur(np.ones(3)), ShapeError, "two dimensions"),
        (lambda: spmd.lax.linalg.schur(np.eye(2), sort_eig_vals=True), SpmdValueError, "sort"),
        (lambda: spmd.lax.linalg.eig(np.eye(2, dtype=np.float16)), SpmdTypeError, "float16"),
        (lambda: spmd.lax.linalg.householder_product(np.ones((2, 3)), np.ones(1)), ShapeError,
         "at least as many rows"),
        (lambda: spmd.lax.linalg.householder_product(np.ones((3, 2)), np.ones(3)), ShapeError,
         "at most min"),
        (lambda: snp.linalg.cond(np.ones((0, 0))), ShapeError, "empty"),
        (lambda: snp.linalg.cond(np.ones((2, 3)), "fro"), ShapeError, "square"),
        (lambda: snp.linalg.tensorinv(np.ones((2, 3)), ind=1), ShapeError, "square matrix"),
        (lambda: snp.linalg.tensorsolve(np.ones((3, 2, 6)), np.ones((2, 3))), ShapeError,
         "leading dimensions"),
        (lambda: spmd.scipy.linalg.solve(np.eye(2), np.ones(2), assume_a="diagonal"),
         SpmdValueError, "assume_a"),
        (lambda: spmd.scipy.linalg.cho_solve((np.eye(3), False), np.ones((3, 2, 3))),
         ShapeError, r"b\[\.\.\., None\]"),
        (lambda: spmd.scipy.linalg.block_diag(np.ones((2, 2, 2))), ShapeError, "at most two"),
        (lambda: spmd.scipy.linalg.eigh(np.eye(2), np.eye(2)), SpmdValueError, "cholesky"),
    ],
)  # fmt: skip
def test_errors_name_the_problem_and_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()
