"""Elementwise functions beyond the case table (tests/cases/): scalars, operators, messages."""

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


@pytest.mark.parametrize(
    "name",
    ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power",
     "arctan2", "maximum", "minimum", "logical_and", "bitwise_or", "equal", "less"],
)  # fmt: skip
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_python_scalars_against_bool_arrays_follow_numpy_2(name, scalar):
    x = np.array([True, False, True])
    for args in ((x, scalar), (scalar, x)):
        try:
            expected = getattr(np, name)(*args)
        except TypeError:  # NumPy has no loop (bool - bool, bitwise on floats)
            with pytest.raises(spmd.SpmdTypeError, match=name):
                getattr(snp, name)(*args)
            continue
        for result in (
            getattr(snp, name)(*args),
            spmd.jit(lambda a, args=args: getattr(snp, name)(*(a if v is x else v for v in args)))(
                x
            ),
        ):
            assert result.dtype == expected.dtype, (args, result.dtype, expected.dtype)


def test_power_operator_squares_as_numpy_does():
    from spmd.numpy.elementwise import _power_operator

    x = np.array([True, False])
    assert (x**2).dtype == np.int8 and np.power(x, 2).dtype == np.int64  # NumPy's own split
    for result in (
        _power_operator(spmd.device_put(x), 2),
        spmd.jit(lambda a: _power_operator(a, 2))(x),
    ):
        assert result.dtype == np.int8 and np.asarray(result).tolist() == [1, 0]
    assert _power_operator(spmd.device_put(x), 3).dtype == (x**3).dtype == np.int64
    # float64 on current NumPy, int8 on NumPy 2.0 (which squares for 2.0 too): as installed
    assert _power_operator(spmd.device_put(x), 2.0).dtype == (x**2.0).dtype
    assert snp.power(x, 2).dtype == np.int64


def test_round_follows_numpy_dtypes_and_rejects_bool_decimals_clearly():
    bools = np.array([True, False])
    for result in (snp.round(bools), spmd.jit(snp.around)(bools)):
        assert result.dtype == np.round(bools).dtype == np.float16
    assert snp.round(3).dtype == np.round(3).dtype == np.int64  # a Python int stays an integer
    for fn in (lambda: snp.round(bools, 1), lambda: spmd.jit(lambda a: snp.round(a, -1))(bools)):
        with pytest.raises(
            spmd.SpmdTypeError, match=r"round: cannot round a bool\[2\] to decimals"
        ):
            fn()
