"""spmd.numpy.linalg.cholesky and spmd.lax.linalg.cholesky / triangular_solve: values against
NumPy (every dtype, batch and flag), derivatives in float64 against finite differences and the
dot-product test (also through every flag of the solve, and complex), vmap against a loop,
sharded batches that run with no collective (uneven and empty blocks included), and the
errors. The case table's rows (tests/cases/linalg.py) run these through the other oracles.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, ShapeError, SpmdTypeError
from spmd import PartitionSpec as P
from tests.cases.linalg import numpy_triangular_solve

RNG = np.random.default_rng(7)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4, np.complex128: 1e-10}
FLAGS = ("left_side", "lower", "transpose_a", "conjugate_a", "unit_diagonal")
EPS = 1e-6


def random(shape, dtype):
    x = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.normal(size=shape)
    return x.astype(dtype)


def adjoint(x):
    return np.conjugate(np.swapaxes(x, -1, -2))


def positive_definite(batch, n, dtype):
    x = random((*batch, n, n), dtype)
    return (x @ adjoint(x) + n * np.eye(n)).astype(dtype)


def well_conditioned(batch, n, dtype):
    """A full matrix whose triangles are both far from singular."""
    return (random((*batch, n, n), dtype) + 4 * np.eye(n)).astype(dtype)


def close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def flag_sets():
    return [
        dict(zip(FLAGS, bits, strict=True)) for bits in itertools.product([False, True], repeat=5)
    ]


# --- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 0), (2, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_matches_numpy(dtype, batch, jitted):
    a = positive_definite(batch, 4, dtype)
    run = (lambda f: spmd.jit(f)) if jitted else (lambda f: f)
    lower = run(snp.linalg.cholesky)(a)
    upper = run(lambda a: snp.linalg.cholesky(a, upper=True))(a)
    assert lower.dtype == a.dtype and lower.shape == a.shape
    close(lower, np.linalg.cholesky(a), TOL[dtype])
    close(upper, np.linalg.cholesky(a, upper=True), TOL[dtype])
    close(run(spmd.lax.linalg.cholesky)(a), np.linalg.cholesky(a), TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_factors_the_hermitian_part_unless_told_to_read_the_lower_triangle(dtype):
    a = positive_definite((2,), 3, dtype)
    skewed = a + np.triu(random((2, 3, 3), dtype), 1)  # not Hermitian
    hermitian = (skewed + adjoint(skewed)) / 2
    close(snp.linalg.cholesky(skewed), np.linalg.cholesky(hermitian), TOL[dtype])
    lower_only = spmd.lax.linalg.cholesky(skewed, symmetrize_input=False)
    close(lower_only, np.linalg.cholesky(skewed), TOL[dtype])  # NumPy reads the lower triangle


def test_cholesky_of_integers_is_float64_and_of_a_non_positive_definite_matrix_nan():
    got = snp.linalg.cholesky(np.array([[4, 2], [2, 5]]))
    assert got.dtype == np.float64
    close(got, np.linalg.cholesky(np.array([[4.0, 2], [2, 5]])), 1e-12)
    stack = np.stack([np.eye(2), -np.eye(2), 2 * np.eye(2)])
    for f in (snp.linalg.cholesky, spmd.jit(snp.linalg.cholesky)):
        out = np.asarray(f(stack))
        assert np.isnan(out[1]).all()
        close(out[[0, 2]], np.linalg.cholesky(stack[[0, 2]]), 1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_solve_matches_numpy_for_every_flag(dtype):
    a = well_conditioned((2,), 4, dtype)
    solve = spmd.jit(spmd.lax.linalg.triangular_solve, static_argnames=FLAGS)
    for flags in flag_sets():
        b = random((2, 4, 3) if flags["left_side"] else (2, 3, 4), dtype)
        want = numpy_triangular_solve(a, b, **flags)
        for f in (spmd.lax.linalg.triangular_solve, solve):
            got = f(a, b, **flags)
            assert got.dtype == dtype, flags
            close(got, want, TOL[dtype] * 10)


def test_triangular_solve_with_a_zero_on_the_diagonal_gives_inf_or_nan_not_an_error():
    a = np.array([[1.0, 0.0], [2.0, 0.0]])
    out = np.asarray(
        spmd.lax.linalg.triangular_solve(a, np.ones((2, 1)), left_side=True, lower=True)
    )
    assert out[0, 0] == 1.0 and not np.isfinite(out[1, 0])


# --- derivatives -----------------------------------------------------------------------------


def check_jvp(f, primals, tangents, tol):
    """jvp against central differences along ``tangents`` (real-linear, complex too)."""
    _, got = spmd.jvp(f, primals, tangents)
    up = f(*[p + EPS * t for p, t in zip(primals, tangents, strict=True)])
    down = f(*[p - EPS * t for p, t in zip(primals, tangents, strict=True)])
    want = (np.asarray(up) - np.asarray(down)) / (2 * EPS)
    close(got, want, tol)


def check_vjp(f, primals, tangents):
    """The dot-product test: <ct, J t> = <Jᵀ ct, t> (real float64)."""
    out, pullback = spmd.vjp(f, *primals)
    _, forward = spmd.jvp(f, primals, tangents)
    ct = RNG.normal(size=out.shape)
    back = pullback(ct)
    lhs = np.sum(ct * np.asarray(forward))
    rhs = sum(np.sum(np.asarray(c) * t) for c, t in zip(back, tangents, strict=True))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_derivatives(upper, jitted):
    def f(a):
        return snp.linalg.cholesky(a, upper=upper)

    f = spmd.jit(f) if jitted else f
    a = positive_definite((3,), 4, np.float64)
    t = RNG.normal(size=a.shape)  # not symmetric: the symmetrization is differentiated too
    check_jvp(f, (a,), (t,), 1e-6)
    check_vjp(f, (a,), (t,))


@pytest.mark.parametrize("dtype", [np.complex128])
def test_complex_cholesky_jvp_matches_finite_differences(dtype):
    a = positive_definite((2,), 3, dtype)
    check_jvp(snp.linalg.cholesky, (a,), (random(a.shape, dtype),), 1e-6)


@pytest.mark.parametrize("flags", flag_sets(), ids=lambda f: ",".join(k for k, v in f.items() if v))
def test_triangular_solve_derivatives_in_a_and_b_for_every_flag(flags):
    a = well_conditioned((2,), 3, np.float64)
    b = RNG.normal(size=(2, 3, 2) if flags["left_side"] else (2, 2, 3))

    def f(a, b):
        return spmd.lax.linalg.triangular_solve(a, b, **flags)

    tangents = (RNG.normal(size=a.shape), RNG.normal(size=b.shape))
    check_jvp(f, (a, b), tangents, 1e-6)
    check_vjp(f, (a, b), tangents)
    check_vjp(spmd.jit(f), (a, b), tangents)
    ac, bc = a + 1j * RNG.normal(size=a.shape), b + 1j * RNG.normal(size=b.shape)
    check_jvp(f, (ac, bc), (tangents[0] * (1 - 2j), tangents[1] * (2 + 1j)), 1e-6)


def test_grad_of_a_cholesky_log_determinant_is_the_inverse():
    a = positive_definite((), 4, np.float64)

    def logdet(a):
        return 2 * snp.sum(snp.log(snp.diagonal(snp.linalg.cholesky(a))))

    close(spmd.grad(logdet)(a), np.linalg.inv(a), 1e-9)


# --- vmap ------------------------------------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_vmap_matches_a_loop(jitted):
    run = spmd.jit if jitted else (lambda f: f)
    a = np.stack([positive_definite((2,), 3, np.float64) for _ in range(4)], axis=1)  # (2,4,3,3)
    got = run(spmd.vmap(snp.linalg.cholesky, in_axes=1, out_axes=2))(a)
    want = np.stack([np.linalg.cholesky(a[:, k]) for k in range(4)], axis=2)
    close(got, want, 1e-12)
    tri, b = well_conditioned((), 3, np.float64), RNG.normal(size=(3, 5, 2))

    def solve(a, b):
        return spmd.lax.linalg.triangular_solve(a, b, left_side=True, lower=True, transpose_a=True)

    got = run(spmd.vmap(solve, in_axes=(None, 1)))(tri, b)
    want = np.stack([numpy_triangular_solve(tri, b[:, k], **_left_lower_t()) for k in range(5)])
    close(got, want, 1e-12)


def _left_lower_t():
    return dict(
        left_side=True, lower=True, transpose_a=True, conjugate_a=False, unit_diagonal=False
    )


# --- sharding ----------------------------------------------------------------------------------


def mesh8():
    return spmd.make_mesh((8,), ("x",))


@pytest.mark.parametrize("batch", [13, 3])  # uneven; and 5 of the 8 blocks empty
def test_a_batch_split_on_x_runs_with_no_collective(batch):
    mesh = mesh8()
    split = NamedSharding(mesh, P("x"))
    a = spmd.device_put(positive_definite((batch,), 4, np.float64), split)
    b = spmd.device_put(RNG.normal(size=(batch, 4, 2)), split)

    def f(a, b):
        factor = snp.linalg.cholesky(a)
        return spmd.lax.linalg.triangular_solve(factor, b, left_side=True, lower=True)

    for g in (f, spmd.grad(lambda a, b: snp.sum(f(a, b) ** 2), argnums=(0, 1))):
        explained = spmd.jit(g).lower(a, b).explain()
        assert "none: every operand already lies where its equation runs" in explained, explained
    got = spmd.jit(f)(a, b)
    assert got.sharding.spec == P("x")
    want = numpy_triangular_solve(np.linalg.cholesky(np.asarray(a)), np.asarray(b), **_left())
    close(got, want, 1e-10)


def _left():
    return dict(
        left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False
    )


def test_right_hand_sides_stay_split_and_matrix_dimensions_are_gathered():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    a = well_conditioned((), 6, np.float64)
    b = spmd.device_put(RNG.normal(size=(6, 10)), NamedSharding(mesh, P(None, "y")))
    solve = spmd.jit(lambda a, b: spmd.lax.linalg.triangular_solve(a, b, **_left()))
    assert "none: every operand" in solve.lower(a, b).explain()
    close(solve(a, b), numpy_triangular_solve(a, np.asarray(b), **_left()), 1e-10)
    rows = spmd.device_put(positive_definite((), 6, np.float64), NamedSharding(mesh, P("x")))
    explained = spmd.jit(snp.linalg.cholesky).lower(rows).explain()
    assert "all-gather over ('x')" in explained, explained
    close(spmd.jit(snp.linalg.cholesky)(rows), np.linalg.cholesky(np.asarray(rows)), 1e-10)
    factor = spmd.jit(lambda a: spmd.lax.linalg.cholesky(a, symmetrize_input=False))
    for spec in (P(None, "y"), P("y", "x"), P(None, ("x", "y"))):
        split = spmd.device_put(np.asarray(rows), NamedSharding(mesh, spec))
        close(factor(split), np.linalg.cholesky(np.asarray(rows)), 1e-10)
        tri = spmd.device_put(a, NamedSharding(mesh, spec))
        close(solve(tri, b), numpy_triangular_solve(a, np.asarray(b), **_left()), 1e-10)


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (4, 3, 2)])
def test_non_square_or_low_rank_input_is_a_shape_error_naming_it(shape):
    for f, argument in ((snp.linalg.cholesky, "a"), (spmd.lax.linalg.cholesky, "x")):
        for run in (f, spmd.jit(f)):
            with pytest.raises(
                ShapeError, match=rf"{argument} has shape \({', '.join(map(str, shape))}"
            ):
                run(np.zeros(shape))


def test_solve_errors_name_the_arguments():
    solve = spmd.lax.linalg.triangular_solve
    with pytest.raises(ShapeError, match=r"b has shape \(4, 2\)"):
        solve(np.eye(3), np.ones((4, 2)), left_side=True)
    with pytest.raises(ShapeError, match=r"leading dimensions"):
        solve(np.ones((2, 3, 3)), np.ones((3, 3, 3)))
    with pytest.raises(ShapeError, match=r"b has shape \(3,\)"):
        solve(np.eye(3), np.ones(3))
    with pytest.raises(SpmdTypeError, match="one dtype"):
        solve(np.eye(3, dtype=np.float32), np.ones((3, 3)))
    with pytest.raises(SpmdTypeError, match="float16"):
        snp.linalg.cholesky(np.eye(2, dtype=np.float16))


def test_numpy_has_no_top_level_cholesky_and_lax_linalg_is_a_module():
    assert "cholesky" not in snp.__all__ and not hasattr(snp, "cholesky")
    assert snp.linalg.cholesky is not None and spmd.lax.linalg.triangular_solve is not None
