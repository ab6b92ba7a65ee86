"""spmd.numpy.linalg's Array API functions (the compositions of spmd/numpy/linalg_compositions.py
and the decompositions on spmd/prims/linalg_lapack.py): values against numpy.linalg (batched,
float32/float64, eagerly, under jit, and with the batch split over 8 devices with no
collective), derivatives in float64 against central differences and the dot-product test,
vmap against a loop, and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, ShapeError, SpmdTypeError, SpmdValueError
from spmd import PartitionSpec as P

RNG = np.random.default_rng(25)
TOL = {np.float32: 2e-4, np.float64: 1e-10}
EPS = 1e-6
BATCHES = [(), (3,), (2, 0), (2, 3)]


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def well_conditioned(batch, n, dtype):
    return (RNG.normal(size=(*batch, n, n)) + 3 * np.eye(n)).astype(dtype)


def symmetric(batch, n, dtype):
    x = RNG.normal(size=(*batch, n, n))
    return (x + np.swapaxes(x, -1, -2)).astype(dtype)


def run(jitted):
    return spmd.jit if jitted else (lambda f: f)


# --- values ----------------------------------------------------------------------------------

SQUARE = ["inv", "det", "eigvalsh", "matrix_norm", "trace", "diagonal", "matrix_transpose"]
ANY_SHAPE = ["svdvals", "pinv", "matrix_rank", "matrix_norm"]


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(set(SQUARE + ANY_SHAPE)))
def test_unary_functions_match_numpy(name, dtype, batch, jitted):
    shapes = [(4, 4)] + ([(5, 3), (2, 4)] if name in ANY_SHAPE else [])
    for shape in shapes:
        x = (symmetric if name == "eigvalsh" else well_conditioned)(batch, shape[0], dtype)
        x = x[..., : shape[1]] if shape[1] < shape[0] else x
        if shape == (2, 4):
            x = RNG.normal(size=(*batch, 2, 4)).astype(dtype)
        got = run(jitted)(getattr(snp.linalg, name))(x)
        want = getattr(np.linalg, name)(x)
        assert np.asarray(got).dtype == want.dtype, (name, got.dtype, want.dtype)
        close(got, want, TOL[dtype] * (10 if name in ("det", "inv", "pinv") else 1))


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decompositions_rebuild_their_matrix_and_match_numpy(dtype, jitted):
    tol = TOL[dtype]
    x, h = well_conditioned((2, 3), 4, dtype), symmetric((2, 3), 4, dtype)
    sign, logabsdet = run(jitted)(snp.linalg.slogdet)(x)
    close(sign, np.linalg.slogdet(x)[0], tol)
    close(logabsdet, np.linalg.slogdet(x)[1], tol)
    for uplo in ("L", "U"):
        w, v = run(jitted)(lambda a, u=uplo: snp.linalg.eigh(a, UPLO=u))(
            np.triu(h) if uplo == "U" else np.tril(h)
        )
        close(w, np.linalg.eigvalsh(h), tol * 10)
        close(
            np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(np.asarray(v), -1, -2)),
            h,
            tol * 10,
        )
    for shape in ((5, 3), (3, 5)):
        a = RNG.normal(size=(2, *shape)).astype(dtype)
        for mode in ("reduced", "complete"):
            q, r = run(jitted)(lambda a, m=mode: snp.linalg.qr(a, mode=m))(a)
            want_q, want_r = np.linalg.qr(a, mode=mode)
            assert q.shape == want_q.shape and r.shape == want_r.shape
            close(np.asarray(q) @ np.asarray(r), a, tol * 10)
            close(np.abs(np.asarray(r)), np.abs(want_r), tol * 10)
        for full in (True, False):
            u, s, vh = run(jitted)(lambda a, f=full: snp.linalg.svd(a, full_matrices=f))(a)
            want = np.linalg.svd(a, full_matrices=full)
            assert (u.shape, s.shape, vh.shape) == tuple(w.shape for w in want)
            k = min(shape)
            rebuilt = (
                np.asarray(u)[..., :k] * np.asarray(s)[..., None, :] @ np.asarray(vh)[..., :k, :]
            )
            close(rebuilt, a, tol * 10)
            close(s, want[1], tol * 10)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_broadcasts_batches_and_takes_a_vector(dtype, jitted):
    a = well_conditioned((2, 1), 4, dtype)
    b = RNG.normal(size=(3, 4, 2)).astype(dtype)
    f = run(jitted)(snp.linalg.solve)
    close(f(a, b), np.linalg.solve(a, b), TOL[dtype] * 10)
    vector = RNG.normal(size=4).astype(dtype)
    close(f(a, vector), np.linalg.solve(a, vector), TOL[dtype] * 10)


def test_a_singular_matrix_gives_nan_for_itself_alone():
    a = well_conditioned((3,), 3, np.float64)
    a[1] = 0.0
    got = np.asarray(snp.linalg.inv(a))
    assert np.isnan(got[1]).all()
    close(got[[0, 2]], np.linalg.inv(a[[0, 2]]), 1e-10)
    assert np.asarray(snp.linalg.slogdet(a).sign)[1] == 0.0


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_compositions_match_numpy(jitted):
    x = RNG.normal(size=(2, 3, 4, 4))
    f = run(jitted)
    for ord in (2, 1, 0, 3.5, -1, np.inf, -np.inf):
        for axis in (None, -1, (0, 2)):
            for keepdims in (False, True):
                got = f(
                    lambda x, o=ord, a=axis, k=keepdims: snp.linalg.vector_norm(
                        x, ord=o, axis=a, keepdims=k
                    )
                )(x)
                close(got, np.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims), 1e-10)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        got = f(lambda x, o=ord: snp.linalg.matrix_norm(x, ord=o, keepdims=True))(x)
        close(got, np.linalg.matrix_norm(x, ord=ord, keepdims=True), 1e-10)
    for offset in (-1, 0, 2):
        close(
            f(lambda x, o=offset: snp.linalg.trace(x, offset=o))(x),
            np.linalg.trace(x, offset=offset),
            1e-12,
        )
        close(
            f(lambda x, o=offset: snp.linalg.diagonal(x, offset=o))(x),
            np.linalg.diagonal(x, offset=offset),
            0,
        )
    for n in (0, 1, 2, 5, -1, -3):
        close(
            f(lambda x, n=n: snp.linalg.matrix_power(x, n))(x + 3 * np.eye(4)),
            np.linalg.matrix_power(x + 3 * np.eye(4), n),
            1e-8,
        )
    u, v = RNG.normal(size=(2, 1, 3)), RNG.normal(size=(4, 3))
    close(f(snp.linalg.cross)(u, v), np.linalg.cross(u, v), 1e-12)
    close(
        f(lambda a, b: snp.linalg.cross(a, b, axis=-2))(np.swapaxes(u, -1, -2), v.T),
        np.linalg.cross(np.swapaxes(u, -1, -2), v.T, axis=-2),
        1e-12,
    )
    c = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
    close(f(snp.linalg.vecdot)(c, c[0]), np.linalg.vecdot(c, c[0]), 1e-12)
    close(f(snp.linalg.outer)(u[0, 0], v[0]), np.linalg.outer(u[0, 0], v[0]), 0)
    close(f(snp.linalg.matrix_transpose)(x), np.linalg.matrix_transpose(x), 0)


def test_rtol_of_pinv_and_matrix_rank_cuts_small_singular_values():
    a = RNG.normal(size=(3, 5, 2)) @ RNG.normal(size=(3, 2, 4))  # rank 2
    assert np.asarray(snp.linalg.matrix_rank(a)).tolist() == [2, 2, 2]
    rtol = np.array([0.0, 1e-2, 0.99])
    close(snp.linalg.matrix_rank(a, rtol=rtol), np.linalg.matrix_rank(a, rtol=rtol), 0)
    close(snp.linalg.pinv(a, rtol=0.5), np.linalg.pinv(a, rtol=0.5), 1e-10)


# --- derivatives -------------------------------------------------------------------------------


def check_jvp(f, primals, tangents, tol=1e-6):
    _, got = spmd.jvp(f, primals, tangents)
    up = f(*[p + EPS * t for p, t in zip(primals, tangents, strict=True)])
    down = f(*[p - EPS * t for p, t in zip(primals, tangents, strict=True)])
    want = (np.asarray(up) - np.asarray(down)) / (2 * EPS)
    close(got, want, tol)


def check_vjp(f, primals, tangents):
    out, pullback = spmd.vjp(f, *primals)
    _, forward = spmd.jvp(f, primals, tangents)
    ct = RNG.normal(size=out.shape)
    lhs = np.sum(ct * np.asarray(forward))
    rhs = sum(np.sum(np.asarray(c) * t) for c, t in zip(pullback(ct), tangents, strict=True))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


def _eigenvectors_fixed_in_sign(a, lower):
    w, v = snp.linalg.eigh(a, UPLO="L" if lower else "U")
    return w, v * snp.sign(v[..., :1, :])


DIFFERENTIABLE = {
    "inv": lambda a, b: snp.linalg.inv(a),
    "solve": lambda a, b: snp.linalg.solve(a, b),
    "det": lambda a, b: snp.linalg.det(a),
    "logabsdet": lambda a, b: snp.linalg.slogdet(a).logabsdet,
    "eigvalsh": lambda a, b: snp.linalg.eigvalsh(a),
    "eigvalsh_upper": lambda a, b: snp.linalg.eigvalsh(a, UPLO="U"),
    "eigenvectors": lambda a, b: _eigenvectors_fixed_in_sign(a, True)[1],
    "eigenvectors_upper": lambda a, b: _eigenvectors_fixed_in_sign(a, False)[1],
    "matrix_power_-2": lambda a, b: snp.linalg.matrix_power(a, -2),
    "vector_norm": lambda a, b: snp.linalg.vector_norm(a, axis=-1, ord=3),
    "cross": lambda a, b: snp.linalg.cross(a[..., :3], a[..., 1:]),
}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_derivatives_match_finite_differences_and_the_dot_product_test(name, jitted):
    a, b = well_conditioned((3,), 4, np.float64), RNG.normal(size=(3, 4, 2))
    if name.startswith("eig"):
        a = np.diag(np.arange(1.0, 5.0) * 3) + 0.3 * symmetric((3,), 4, np.float64)
    f = DIFFERENTIABLE[name]
    f = spmd.jit(f) if jitted else f
    tangents = (RNG.normal(size=a.shape), RNG.normal(size=b.shape))  # not symmetric
    check_jvp(f, (a, b), tangents)
    check_vjp(f, (a, b), tangents)


def test_complex_slogdet_and_det_jvp_match_finite_differences():
    a = well_conditioned((2,), 3, np.float64) + 1j * RNG.normal(size=(2, 3, 3))
    t = RNG.normal(size=a.shape) + 1j * RNG.normal(size=a.shape)
    check_jvp(snp.linalg.det, (a,), (t,))
    check_jvp(lambda a: snp.linalg.slogdet(a).sign, (a,), (t,))
    check_jvp(lambda a: snp.linalg.slogdet(a).logabsdet, (a,), (t,))
    h = a + np.conjugate(np.swapaxes(a, -1, -2))
    check_jvp(snp.linalg.eigvalsh, (h,), (t,))


def svd_fixed_in_phase(a, full_matrices=False):
    """svd with each singular vector pair scaled so that U's first row is real and positive."""
    u, s, vh = snp.linalg.svd(a, full_matrices=full_matrices)
    first = u[..., :1, :]
    phase = snp.conjugate(first) / snp.abs(first)
    return u * phase, s, vh * snp.linalg.matrix_transpose(snp.conjugate(phase))


def qr_fixed_in_phase(a):
    """qr with R's diagonal real and positive (Q's columns scaled to match)."""
    q, r = snp.linalg.qr(a)
    d = snp.linalg.diagonal(r)
    phase = d / snp.abs(d)
    return q * phase[..., None, :], r * snp.conjugate(phase)[..., :, None]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(2, 4, 4), (2, 5, 3), (2, 3, 5)])
def test_svd_and_qr_derivatives_match_finite_differences(shape, dtype):
    a, t = RNG.normal(size=shape).astype(dtype), RNG.normal(size=shape).astype(dtype)
    if dtype == np.complex128:
        a, t = a + 1j * RNG.normal(size=shape), t + 1j * RNG.normal(size=shape)
    for k in range(3):
        check_jvp(lambda a, k=k: svd_fixed_in_phase(a)[k], (a,), (t,))
    check_jvp(snp.linalg.svdvals, (a,), (t,))
    check_jvp(snp.linalg.pinv, (a,), (t,))
    check_jvp(lambda a: snp.linalg.matrix_norm(a, ord="nuc"), (a,), (t,))
    if shape[-2] >= shape[-1]:
        for k in range(2):
            check_jvp(lambda a, k=k: qr_fixed_in_phase(a)[k], (a,), (t,))
    if dtype == np.float64:
        check_vjp(lambda a: svd_fixed_in_phase(a)[0], (a,), (t,))
        check_vjp(snp.linalg.pinv, (a,), (t,))


def test_derivatives_where_the_factors_are_not_unique_are_refused():
    wide, tall = RNG.normal(size=(3, 5)), RNG.normal(size=(5, 3))
    with pytest.raises(SpmdTypeError, match="full_matrices=False"):
        spmd.grad(lambda a: snp.sum(snp.linalg.svd(a).U))(tall)
    with pytest.raises(SpmdTypeError, match="reduced QR"):
        spmd.grad(lambda a: snp.sum(snp.linalg.qr(a).R))(wide)
    with pytest.raises(SpmdTypeError, match="reduced QR"):
        spmd.grad(lambda a: snp.sum(snp.linalg.qr(a, mode="complete").Q))(tall)
    close(spmd.grad(lambda a: snp.sum(snp.linalg.svd(a, full_matrices=True).S))(tall[:3]),
          spmd.grad(lambda a: snp.sum(snp.linalg.svdvals(a)))(tall[:3]), 1e-12)  # fmt: skip


# --- vmap and sharding ------------------------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_vmap_matches_a_loop(jitted):
    a = np.stack([well_conditioned((2,), 3, np.float64) for _ in range(4)], axis=1)  # (2,4,3,3)
    for name in ("inv", "det", "eigvalsh", "svdvals", "slogdet", "qr"):
        f = getattr(snp.linalg, name)
        got = run(jitted)(spmd.vmap(f, in_axes=1))(a)
        want = [getattr(np.linalg, name)(a[:, k]) for k in range(4)]
        for g, w in zip(
            spmd.tree_util.tree_leaves(got),
            zip(*want, strict=True) if isinstance(want[0], tuple) else [want],
            strict=True,
        ):
            close(g, np.stack(w), 1e-10)
    b = RNG.normal(size=(3, 5))
    got = run(jitted)(spmd.vmap(snp.linalg.solve, in_axes=(None, 1)))(a[0, 0], b)
    close(got, np.stack([np.linalg.solve(a[0, 0], b[:, k]) for k in range(5)]), 1e-10)


@pytest.mark.parametrize("batch", [13, 3])  # uneven; and 5 of the 8 blocks empty
def test_a_batch_split_on_x_runs_with_no_collective(batch):
    mesh = spmd.make_mesh((8,), ("x",))
    split = NamedSharding(mesh, P("x"))
    a = spmd.device_put(well_conditioned((batch,), 4, np.float64), split)
    b = spmd.device_put(RNG.normal(size=(batch, 4, 2)), split)

    def f(a, b):
        w, _ = snp.linalg.eigh(a + snp.linalg.matrix_transpose(a))
        return (
            snp.linalg.solve(a, b),
            snp.linalg.inv(a),
            snp.linalg.det(a),
            snp.linalg.slogdet(a).logabsdet,
            w,
            snp.linalg.svdvals(a),
            snp.linalg.qr(a).R,
        )

    explained = spmd.jit(f).lower(a, b).explain()
    assert "none: every operand already lies where its equation runs" in explained, explained
    got = spmd.jit(f)(a, b)
    x = np.asarray(a)
    want = (
        np.linalg.solve(x, np.asarray(b)),
        np.linalg.inv(x),
        np.linalg.det(x),
        np.linalg.slogdet(x)[1],
        np.linalg.eigvalsh(x + np.swapaxes(x, -1, -2)),
        np.linalg.svdvals(x),
    )
    for g, w in zip(got, want, strict=False):
        assert g.sharding.spec[:1] == P("x")
        close(g, w, 1e-9)
    close(np.abs(np.asarray(got[-1])), np.abs(np.linalg.qr(x)[1]), 1e-9)


def test_matrix_dimensions_split_are_gathered():
    mesh = spmd.make_mesh((8,), ("x",))
    a = spmd.device_put(well_conditioned((), 8, np.float64), NamedSharding(mesh, P("x")))
    explained = spmd.jit(snp.linalg.inv).lower(a).explain()
    assert "all-gather over ('x')" in explained, explained
    close(spmd.jit(snp.linalg.inv)(a), np.linalg.inv(np.asarray(a)), 1e-10)


# --- errors ------------------------------------------------------------------------------------


def test_errors_name_the_argument_and_the_fix():
    with pytest.raises(ShapeError, match="x has shape"):
        snp.linalg.inv(np.ones(3))
    with pytest.raises(ShapeError, match="square"):
        snp.linalg.det(np.ones((2, 3)))
    with pytest.raises(ShapeError, match="x2's rows must match"):
        snp.linalg.solve(np.eye(3), np.ones((2, 1)))
    with pytest.raises(ShapeError, match="do not broadcast"):
        snp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(SpmdValueError, match="mode"):
        snp.linalg.qr(np.eye(2), mode="r")
    with pytest.raises(SpmdValueError, match="UPLO"):
        snp.linalg.eigh(np.eye(2), UPLO="X")
    with pytest.raises(SpmdValueError, match="not a matrix norm"):
        snp.linalg.matrix_norm(np.eye(2), ord=3)
    with pytest.raises(SpmdValueError, match="ord"):
        snp.linalg.vector_norm(np.eye(2), ord=float("nan"))
    with pytest.raises(ShapeError, match="size 3"):
        snp.linalg.cross(np.ones(4), np.ones(4))
    with pytest.raises(SpmdTypeError, match="must be an integer"):
        snp.linalg.matrix_power(np.eye(2), 1.5)
    with pytest.raises(SpmdTypeError, match="float16"):
        snp.linalg.svdvals(np.eye(2, dtype=np.float16))


def test_the_standard_names_live_on_linalg_and_not_at_top_level():
    for name in ("det", "inv", "solve", "eigh", "svdvals", "vector_norm", "matrix_norm", "qr"):
        assert callable(getattr(snp.linalg, name)) and name not in snp.__all__
    assert snp.linalg.diagonal is not snp.diagonal  # the last two axes, offset keyword-only
