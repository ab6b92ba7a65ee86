"""Every elementwise function against NumPy: dtypes, shapes (scalars and size 0), eager and jit."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from tests.cases import CASES, DTYPES, SHAPES, make_input


def numpy_result(name, args):
    with np.errstate(all="ignore"):
        return getattr(np, {"abs": "absolute"}.get(name, name))(*args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_matches_numpy_eagerly_and_under_jit(case, dtype):
    fn = getattr(snp, case.name)
    jitted = spmd.jit(fn)
    for shape in SHAPES:
        args = [make_input(shape, dtype, seed, case.positive) for seed in range(case.arity)]
        try:
            expected = numpy_result(case.name, args)
        except TypeError:
            with pytest.raises(spmd.SpmdTypeError, match=case.name):
                fn(*[spmd.device_put(a) for a in args])
            return
        for result in (fn(*map(spmd.device_put, args)), jitted(*map(spmd.device_put, args))):
            assert result.dtype == expected.dtype and result.shape == expected.shape
            np.testing.assert_array_equal(np.asarray(result), expected)


@pytest.mark.parametrize(
    ("dtype", "scalar"), list(itertools.product((np.int32, np.float32, np.uint8), (2, 2.5, True)))
)
def test_python_scalars_promote_weakly_as_in_numpy_2(dtype, scalar):
    x = np.arange(1, 4, dtype=dtype)
    expected = np.multiply(x, scalar)
    for result in (snp.multiply(spmd.device_put(x), scalar), spmd.jit(lambda a: a * scalar)(x)):
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(result), expected)


def test_broadcasting_and_where_and_clip():
    a, b = np.arange(6.0).reshape(2, 3), np.array([1.0, -1.0, 2.0], np.float32)
    np.testing.assert_array_equal(np.asarray(snp.add(a, b)), a + b)
    result = snp.where(a > 2, a, b)
    assert result.dtype == np.where(a > 2, a, b).dtype
    np.testing.assert_array_equal(np.asarray(result), np.where(a > 2, a, b))
    np.testing.assert_array_equal(np.asarray(snp.clip(a, 1, 4)), np.clip(a, 1, 4))
    np.testing.assert_array_equal(np.asarray(snp.round(a / 7, 2)), np.round(a / 7, 2))


def test_shape_mismatch_names_both_operands():
    with pytest.raises(spmd.ShapeError, match=r"add: .*x1 f32\[3\], x2 f32\[4\]"):
        snp.add(np.ones(3, np.float32), np.ones(4, np.float32))


def test_operators_on_arrays_and_numpy_ufuncs_dispatch():
    x = spmd.device_put(np.arange(4.0))
    assert (-x + 2 * x - x / 2**2).tolist() == list(
        -np.arange(4.0) + 2 * np.arange(4.0) - np.arange(4.0) / 4
    )
    assert isinstance(np.sin(x), spmd.Array)
    assert (x // 3).tolist() == [0.0, 0.0, 0.0, 1.0] and (x % 3).tolist() == [0.0, 1.0, 2.0, 0.0]


def test_numpy_scalars_are_strong_unlike_python_scalars():
    x = np.ones(2, np.float32)
    for result in (snp.multiply(x, np.float64(2)), spmd.jit(lambda a: a * np.float64(2))(x)):
        assert result.dtype == np.multiply(x, np.float64(2)).dtype == np.float64
    assert snp.multiply(x, 2.0).dtype == np.float32
