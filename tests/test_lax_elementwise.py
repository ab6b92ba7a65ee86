"""spmd.lax's elementwise functions (rsqrt, integer_pow, clamp) against NumPy and JAX's rules."""

import numpy as np
import pytest

import spmd
from spmd.lax.elementwise import clamp, integer_pow, rsqrt


def test_rsqrt_is_one_over_sqrt_in_the_operands_dtype_with_its_derivative():
    for dtype in (np.float32, np.float64, np.complex64):
        x = np.array([4.0, 0.0, -1.0, np.inf, 2.5], dtype)
        with np.errstate(all="ignore"):
            expected = 1 / np.sqrt(x)
        for result in (rsqrt(x), spmd.jit(rsqrt)(x)):
            assert result.dtype == dtype
            np.testing.assert_allclose(result, expected, rtol=1e-6)
    x = np.array([0.5, 2.0, 9.0])
    np.testing.assert_allclose(spmd.grad(lambda v: rsqrt(v).sum())(x), -0.5 * x**-1.5)
    with pytest.raises(spmd.SpmdTypeError, match=r"rsqrt: x is i64\[3\].*astype"):
        rsqrt(np.arange(3))


@pytest.mark.parametrize("power", [0, 1, 2, 3, 5, 8, -1, -3])
def test_integer_pow_multiplies_exactly_and_differentiates(power):
    x = np.array([-1.5, 0.5, 2.0, 3.0])
    expected = np.ones_like(x) if power == 0 else x**power
    for result in (integer_pow(x, power), spmd.jit(lambda v: integer_pow(v, power))(x)):
        assert result.dtype == x.dtype
        np.testing.assert_allclose(result, expected, rtol=1e-15)
    grad = spmd.grad(lambda v: integer_pow(v, power).sum())(x)
    np.testing.assert_allclose(grad, power * x ** (power - 1) if power else 0 * x, rtol=1e-14)
    if power >= 0:  # integers keep their dtype and wrap as repeated multiplication does
        ints = np.array([-3, 2, 7, 1000], np.int16)
        wanted = np.ones_like(ints)
        for _ in range(power):
            wanted = wanted * ints
        result = integer_pow(ints, power)
        assert result.dtype == np.int16
        np.testing.assert_array_equal(result, wanted)


def test_integer_pow_refusals_name_the_fix():
    with pytest.raises(spmd.SpmdTypeError, match=r"negative power -2.*astype"):
        integer_pow(np.arange(3), -2)
    with pytest.raises(spmd.SpmdTypeError, match=r"y must be a Python int.*numpy.power"):
        integer_pow(np.ones(3), 2.5)
    with pytest.raises(spmd.SpmdTypeError, match=r"bool\[2\]"):
        integer_pow(np.array([True, False]), 2)


def test_clamp_values_follow_xla_and_nan_stays():
    x = np.array([-2.0, 0.0, 0.5, 1.0, 3.0, np.nan], np.float32)
    lo, hi = np.float32(0), np.float32(1)
    for result in (clamp(lo, x, hi), clamp(0.0, x, 1.0), spmd.jit(clamp)(lo, x, hi)):
        assert result.dtype == np.float32
        np.testing.assert_array_equal(result, np.minimum(np.maximum(x, lo), hi))
    lows = np.array([0, 2, -1, 5, 0, 0], np.float32)  # bounds of x's shape; min > max gives max
    np.testing.assert_array_equal(clamp(lows, x, 1.0), np.minimum(np.maximum(x, lows), 1))
    ints = np.arange(-3, 4, dtype=np.int8)
    np.testing.assert_array_equal(clamp(-1, ints, 2), np.clip(ints, -1, 2))


def test_clamp_derivative_is_jaxs_strict_selection():
    x = np.array([-2.0, 0.0, 0.5, 1.0, 3.0, 0.25])
    lo, hi = np.zeros(6), np.ones(6)
    lo[5], hi[5] = 2.0, 1.0  # min > max: the result is max, and no operand is selected
    d_lo, d_x, d_hi = spmd.grad(lambda a, b, c: clamp(a, b, c).sum(), argnums=(0, 1, 2))(lo, x, hi)
    inside = (x > lo) & (x < hi)
    np.testing.assert_array_equal(d_x, inside.astype(float))
    np.testing.assert_array_equal(d_lo, ((lo > x) & (lo < hi)).astype(float))
    np.testing.assert_array_equal(d_hi, (hi < x).astype(float))
    assert d_x[1] == d_lo[1] == d_hi[3] == d_x[3] == 0  # ties pass no tangent, as in JAX


def test_clamp_refuses_other_dtypes_and_shapes():
    x = np.ones(4, np.float32)
    with pytest.raises(spmd.SpmdTypeError, match=r"min is f64\[\].*x's dtype"):
        clamp(np.float64(0), x, np.float32(1))
    with pytest.raises(spmd.SpmdTypeError, match=r"max=0.5 is not exactly.*int32"):
        clamp(0, np.arange(3, dtype=np.int32), 0.5)
    with pytest.raises(spmd.ShapeError, match=r"min has shape \(2,\).*broadcast_to"):
        clamp(np.zeros(2, np.float32), x, np.float32(1))
