"""Elementwise functions beyond the case table (tests/cases.py): scalars, operators, messages."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp


@pytest.mark.parametrize(
    ("dtype", "scalar"), list(itertools.product((np.int32, np.float32, np.uint8), (2, 2.5, True)))
)
def test_python_scalars_promote_weakly_as_in_numpy_2(dtype, scalar):
    x = np.arange(1, 4, dtype=dtype)
    expected = np.multiply(x, scalar)
    for result in (snp.multiply(spmd.device_put(x), scalar), spmd.jit(lambda a: a * scalar)(x)):
        assert result.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(result), expected)


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
