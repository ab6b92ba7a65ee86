"""spmd.nn against float64 NumPy formulas, eagerly and under jit, and the tutorial's layer."""

import math
import warnings

import numpy as np
import pytest

import spmd
import spmd.nn as nn
import spmd.numpy as snp

RTOL = {np.float32: 2e-6, np.float64: 1e-12}
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _lse(x, axis, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


ORACLES = {  # float64 reference formulas
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0),
    # 0.5 * (1 + tanh(u)) written as 1 / (1 + exp(-2u)), which does not cancel for x << 0
    "gelu": lambda x: x / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "gelu_exact": lambda x: 0.5 * x * _erfc(-x / np.sqrt(2)),
}
FUNCTIONS = {
    "sigmoid": nn.sigmoid,
    "relu": nn.relu,
    "gelu": nn.gelu,
    "gelu_exact": lambda x: nn.gelu(x, approximate=False),
}


def _check(fn, oracle, x, dtype, **tolerances):
    expected = np.asarray(oracle(x.astype(np.float64)))
    for result in (fn(x), spmd.jit(fn)(x)):
        assert result.dtype == dtype and result.shape == expected.shape
        np.testing.assert_allclose(np.asarray(result), expected, rtol=RTOL[dtype], **tolerances)


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 40)])
def test_elementwise_activations_match_numpy(name, dtype, shape):
    x = (np.random.default_rng(0).normal(size=shape) * 4).astype(dtype)
    _check(FUNCTIONS[name], ORACLES[name], x, dtype, atol=1e-7 if dtype == np.float32 else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "axis"), [((5,), -1), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), (0, 2))]
)
def test_softmax_and_log_softmax_match_numpy(dtype, shape, axis):
    x = (np.random.default_rng(1).normal(size=shape) * 3).astype(dtype)
    tuple_axis = axis if isinstance(axis, tuple) else (axis,)

    def softmax(v):
        e = np.exp(v - np.max(v, axis=tuple_axis, keepdims=True))
        return e / np.sum(e, axis=tuple_axis, keepdims=True)

    _check(lambda v: nn.softmax(v, axis=axis), softmax, x, dtype)
    _check(
        lambda v: nn.log_softmax(v, axis=axis), lambda v: v - _lse(v, tuple_axis, True), x, dtype
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_numpy(dtype, axis, keepdims):
    x = (np.random.default_rng(2).normal(size=(2, 3, 4)) * 3).astype(dtype)
    tuple_axis = (0, 1, 2) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    _check(
        lambda v: nn.logsumexp(v, axis=axis, keepdims=keepdims),
        lambda v: _lse(v, tuple_axis, keepdims),
        x,
        dtype,
    )


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


@pytest.mark.parametrize(("dtype", "axis"), [(np.float32, -1), (np.int32, 0), (np.bool_, 1)])
def test_one_hot_matches_numpy(dtype, axis):
    labels = np.array([[0, 2, 3], [-1, 1, 4]])  # -1 and 4 are out of range: all-zero vectors
    expected = np.moveaxis(labels[..., None] == np.arange(4), -1, axis).astype(dtype)
    fn = lambda x: nn.one_hot(x, 4, dtype=dtype, axis=axis)  # noqa: E731
    for result in (fn(labels), spmd.jit(fn)(labels)):
        assert result.dtype == dtype and result.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(result), expected)
    assert nn.one_hot(np.arange(3), 3).dtype == np.float32


def test_tutorial_layer_value():
    rng = np.random.default_rng(0)
    x, w, b = (
        v.astype(np.float32)
        for v in (rng.normal(size=32), rng.normal(size=(32, 4)), rng.normal(size=4))
    )
    y = nn.sigmoid(snp.matmul(x, w) + b)
    assert y.dtype == np.float32 and y.shape == (4,)
    oracle = 1 / (1 + np.exp(-(x.astype(np.float64) @ w + b)))
    np.testing.assert_allclose(np.asarray(y), oracle, rtol=1e-6)
    # The tutorial's printed values; they differ from NumPy's float32 matmul by up to 2e-6.
    np.testing.assert_allclose(
        np.asarray(y), [0.02138912, 0.893112, 0.59892005, 0.97742504], rtol=3e-6
    )


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
