"""spmd.nn beyond the case table (tests/cases/): overflow, the tutorial's layer, messages."""

import math
import warnings

import numpy as np
import pytest

import spmd
import spmd.nn as nn
import spmd.numpy as snp
from tests.tolerance import assert_close_sigmoid_layer


def test_large_inputs_do_not_overflow():
    big = np.array([-1000.0, 0.0, 1000.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.asarray(nn.sigmoid(big)).tolist() == [0.0, 0.5, 1.0]
        assert np.asarray(nn.softmax(np.array([1000.0, 1000.0], np.float32))).tolist() == [0.5, 0.5]
        lse = nn.logsumexp(np.array([1000.0, 1000.0], np.float32))
        np.testing.assert_allclose(float(np.asarray(lse)), 1000 + math.log(2), rtol=1e-7)
        assert np.asarray(nn.gelu(big, approximate=False)).tolist() == [0.0, 0.0, 1000.0]
    with np.errstate(divide="ignore"):
        assert float(np.asarray(nn.logsumexp(np.full(3, -np.inf)))) == -np.inf


def test_sigmoid_of_float16_does_not_flush_where_exp_overflows_float16():
    x = np.array([-12.0, -11.0, 12.0], np.float16)  # exp(12) is past float16's 65504
    y = nn.sigmoid(x)
    assert y.dtype == np.float16
    oracle = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16)
    np.testing.assert_array_equal(np.asarray(y), oracle)


def test_tutorial_layer_value():
    rng = np.random.default_rng(0)
    x, w, b = (
        v.astype(np.float32)
        for v in (rng.normal(size=32), rng.normal(size=(32, 4)), rng.normal(size=4))
    )
    y = nn.sigmoid(snp.matmul(x, w) + b)
    assert y.dtype == np.float32 and y.shape == (4,)
    # float32 sums of 32 products, in whatever order this machine's BLAS takes: the tolerance
    # follows float32's eps and the length (tests/tolerance.py), against the float64 value.
    assert_close_sigmoid_layer(y, x, w, b)
    # The tutorial's printed values (from one machine's float32 matmul) are as close.
    assert_close_sigmoid_layer(np.float32([0.02138912, 0.893112, 0.59892005, 0.97742504]), x, w, b)


def test_misuse_raises_errors_that_name_the_problem():
    with pytest.raises(spmd.ShapeError, match=r"softmax: axis=2 is out of bounds for f64\[2,3\]"):
        nn.softmax(np.ones((2, 3)), axis=2)
    with pytest.raises(spmd.ShapeError, match=r"logsumexp: axis=\(0, -2\) names axis 0 twice"):
        nn.logsumexp(np.ones((2, 3)), axis=(0, -2))
    with pytest.raises(spmd.SpmdTypeError, match="one_hot: num_classes must be a concrete int"):
        nn.one_hot(np.arange(3), 3.0)


def test_gelu_approximation_is_the_tanh_formula():
    x = np.linspace(-3, 3, 61)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(np.asarray(nn.gelu(x)), tanh_form, rtol=1e-12, atol=1e-15)
    assert not np.allclose(np.asarray(nn.gelu(x, approximate=False)), tanh_form, rtol=1e-5)


def test_empty_axes_give_what_jax_gives():
    for dtype in (np.float32, np.float64, np.int32):
        x = np.zeros((2, 0, 3), dtype)
        for fn in (nn.softmax, nn.log_softmax):
            for result in (fn(x, axis=1), spmd.jit(lambda a, fn=fn: fn(a, axis=1))(x)):
                assert result.shape == (2, 0, 3)
                assert result.dtype == (np.float32 if dtype == np.float32 else np.float64)
    for x in (np.zeros(0, np.float32), np.zeros((2, 0, 3), np.float32)):
        for result in (nn.logsumexp(x), spmd.jit(nn.logsumexp)(x)):
            assert result.dtype == np.float32 and np.asarray(result).tolist() == -np.inf
    keep = nn.logsumexp(np.zeros((2, 0, 3)), axis=1, keepdims=True)
    assert keep.shape == (2, 1, 3) and np.all(np.asarray(keep) == -np.inf)


def test_gelu_takes_bools_in_both_forms_as_floats():
    x = np.array([True, False])
    for approximate in (True, False):  # in float16, the float NumPy's ufuncs give bools
        expected = nn.gelu(x.astype(np.float16), approximate=approximate)
        for result in (
            nn.gelu(x, approximate=approximate),
            nn.gelu(spmd.device_put(x), approximate=approximate),
            spmd.jit(lambda a, approximate=approximate: nn.gelu(a, approximate))(x),
        ):
            assert result.dtype == np.float16
            np.testing.assert_array_equal(np.asarray(result), np.asarray(expected))
