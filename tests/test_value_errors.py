"""NumPy 2's value rules for Python ints, raised as SpmdErrors when the function is called
(eagerly or while tracing), with NumPy itself as the oracle for when they apply."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp

OPS = ["add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
       "floor_divide", "remainder", "power", "equal", "less", "greater_equal"]  # fmt: skip
SPMD_ERRORS = {
    OverflowError: spmd.SpmdOverflowError,
    ValueError: spmd.SpmdValueError,
    TypeError: spmd.SpmdTypeError,
}
DTYPES = [np.uint8, np.int8, np.int16, np.uint32, np.int32, np.float32]


def _edges(dtype) -> list[int]:
    if np.dtype(dtype).kind == "f":
        return [-1, 300, 2**40]
    info = np.iinfo(dtype)
    return [int(info.min) - 1, int(info.min), int(info.max), int(info.max) + 1, -1, 3]


def _numpy(op, x, value, scalar_first):
    args = (value, x) if scalar_first else (x, value)
    try:
        with np.errstate(all="ignore"):
            return getattr(np, op)(*args)
    except (OverflowError, ValueError, TypeError) as error:
        return type(error)


CASES = [
    (op, dtype, value, first)
    for op, dtype in itertools.product(OPS, DTYPES)
    for value, first in itertools.product(_edges(dtype), (False, True))
]


@pytest.mark.parametrize(("op", "dtype", "value", "scalar_first"), CASES)
def test_python_ints_follow_numpy_eagerly_and_under_jit(op, dtype, value, scalar_first):
    x = np.array([1, 2, 5], dtype)
    expected = _numpy(op, x, value, scalar_first)
    fn = getattr(snp, op)

    def call(v):
        return fn(value, v) if scalar_first else fn(v, value)

    for run in (call, spmd.jit(call)):
        if isinstance(expected, type):
            error = SPMD_ERRORS[expected]
            with pytest.raises(error, match=rf"spmd\.numpy\.{op}"), np.errstate(all="ignore"):
                run(x)
        else:
            with np.errstate(all="ignore"):
                got = run(x)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(np.asarray(got), expected)


def test_the_overflow_message_names_the_operand_its_dtype_and_the_fix():
    x = np.array([1, 2], np.uint8)
    with pytest.raises(OverflowError, match=r"x2, the Python integer 300.*x1 is u8\[2\].*0 to 255"):
        snp.add(x, 300)
    with pytest.raises(spmd.SpmdOverflowError, match=r"x1, the Python integer -1.*astype"):
        spmd.jit(lambda v: -1 * v)(x)


def test_negative_exponent_arrays_fail_as_they_run_on_every_path():
    base = np.arange(1, 9)
    exponent = np.array([1, 2, -1, 1, 1, 1, 1, 1])
    mesh = spmd.make_mesh((8,), ("x",))
    sharded = spmd.device_put(base, spmd.NamedSharding(mesh, spmd.P("x")))
    for run in (snp.power, spmd.jit(snp.power)):
        for b in (base, sharded):
            with pytest.raises(spmd.SpmdValueError, match=r"negative.*astype\(np\.float64\)"):
                run(b, exponent)
    np.testing.assert_array_equal(np.asarray(spmd.jit(snp.power)(sharded, abs(exponent))),
                                  base ** abs(exponent))  # fmt: skip
