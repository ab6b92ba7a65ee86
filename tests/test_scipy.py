"""spmd.scipy beyond the case table: derivatives of the special-function primitives against
float64 finite differences, xlogy's JAX derivative at x == 0, the MNIST example's import."""

import numpy as np
import pytest
import scipy.special as sp

import spmd
import spmd.lax as lax
import spmd.scipy.special as ss


def _finite_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize(
    ("fn", "oracle", "x"),
    [
        (lax.erf, sp.erf, np.linspace(-2, 2, 7)),
        (lax.erfc, sp.erfc, np.linspace(-2, 2, 7)),
        (lax.erf_inv, sp.erfinv, np.linspace(-0.9, 0.9, 7)),
        (lax.lgamma, sp.gammaln, np.linspace(0.3, 5, 7)),
        (lax.digamma, sp.digamma, np.linspace(0.3, 5, 7)),
        (lambda v: lax.polygamma(1, v), lambda v: sp.polygamma(1, v), np.linspace(0.3, 5, 7)),
    ],
)
def test_derivatives_match_finite_differences(fn, oracle, x):
    grad = spmd.jit(spmd.vmap(spmd.grad(fn)))(x)
    np.testing.assert_allclose(np.asarray(grad), _finite_difference(oracle, x), rtol=1e-7)
    second = spmd.vmap(spmd.grad(spmd.grad(fn)))(x)
    first = lambda v: np.asarray(spmd.vmap(spmd.grad(fn))(v))  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(second), _finite_difference(first, x), rtol=1e-5, atol=1e-6
    )


def test_xlogy_derivative_is_jax_s_at_zero():
    x, y = np.array([0.0, 0.0, 2.0]), np.array([3.0, 0.5, 4.0])
    assert np.asarray(ss.xlogy(x, np.array([0.0, 0.5, 4.0]))).tolist()[:2] == [0.0, 0.0]
    dx = spmd.grad(lambda a: ss.xlogy(a, y).sum())(x)
    np.testing.assert_allclose(np.asarray(dx), np.log(y))  # finite differences agree at 0
    dy = spmd.grad(lambda b: ss.xlogy(x, b).sum())(y)
    np.testing.assert_allclose(np.asarray(dy), x / y)


def test_polygamma_refuses_traced_or_negative_orders():
    with pytest.raises(spmd.SpmdValueError, match="m=-1 is negative"):
        lax.polygamma(-1, np.ones(2))
    with pytest.raises(spmd.SpmdTypeError, match="m must be a concrete non-negative int"):
        lax.polygamma(1.5, np.ones(2))


def test_mnist_example_import():
    from spmd.scipy.special import logsumexp

    x = np.array([[1.0, 2.0], [3.0, 1000.0]])
    np.testing.assert_allclose(np.asarray(logsumexp(x, axis=1)), sp.logsumexp(x, axis=1))
