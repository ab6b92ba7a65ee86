"""``spmd.closure_convert``: traced closed-over values become arguments (the way JAX's
custom_vjp examples pass them to a rule), checked against finite differences in float64."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.errors import SpmdTypeError


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_hoists_only_traced_values():
    constant = np.float64(2.0)

    def outer(w):
        f, hoisted = spmd.closure_convert(lambda x: snp.sin(x * w) + constant * x, 1.0)
        assert len(hoisted) == 1
        return f(3.0, *hoisted)

    np.testing.assert_allclose(spmd.grad(outer)(0.5), 3 * np.cos(1.5), rtol=1e-12)
    np.testing.assert_allclose(spmd.jit(outer)(0.5), np.sin(1.5) + 6.0, rtol=1e-12)
    f, hoisted = spmd.closure_convert(lambda x: x * constant, 1.0)
    assert hoisted == []
    assert f(4.0) == 8.0


def test_custom_vjp_rule_gets_the_hoisted_values_as_arguments():
    def apply(f, x, *params):
        return f(x, *params)

    def apply_fwd(f, x, *params):
        return f(x, *params), (x, params)

    def apply_bwd(f, res, g):
        x, params = res
        _, pullback = spmd.vjp(f, x, *params)
        return pullback(g)

    apply = spmd.custom_vjp(apply, nondiff_argnums=(0,))
    apply.defvjp(apply_fwd, apply_bwd)

    def loss(w, x):
        f, hoisted = spmd.closure_convert(lambda y: snp.tanh(y * w), x)
        return apply(f, x, *hoisted) ** 2

    w, x = 1.3, 0.7
    np.testing.assert_allclose(
        spmd.grad(loss, argnums=0)(w, x), fd(lambda v: np.tanh(v * x) ** 2, w), rtol=1e-7
    )
    np.testing.assert_allclose(
        spmd.grad(loss, argnums=1)(w, x), fd(lambda v: np.tanh(w * v) ** 2, x), rtol=1e-7
    )


def test_converted_function_checks_its_arguments():
    f, _ = spmd.closure_convert(lambda x, y: x + y, 1.0, 2.0)
    with pytest.raises(SpmdTypeError, match="traced for arguments"):
        f((1.0, 2.0))
