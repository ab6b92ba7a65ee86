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


SPECIAL_VALUES = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e300, -1e-300])


@pytest.mark.parametrize(
    "name",
    ["sinh", "cosh", "arcsinh", "arccosh", "arctanh", "log2", "log10", "square", "trunc",
     "isinf", "signbit"],
)  # fmt: skip
def test_new_unary_functions_match_numpy_on_signed_zeros_infinities_and_nan(name):
    for dtype in (np.float32, np.float64):
        x = SPECIAL_VALUES.astype(dtype)
        with np.errstate(all="ignore"):
            expected = getattr(np, name)(x)
            got = [getattr(snp, name)(x), spmd.jit(getattr(snp, name))(x)]
        for result in got:
            assert result.dtype == expected.dtype
            np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))
            np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("name", ["hypot", "copysign", "logaddexp", "arctan2"])
def test_new_binary_functions_match_numpy_on_every_pair_of_special_values(name):
    x, y = np.meshgrid(SPECIAL_VALUES, SPECIAL_VALUES)
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(x, y)
        result = spmd.jit(getattr(snp, name))(x, y)
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_shifts_by_negative_or_too_wide_amounts_follow_numpy(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, -3 if info.min else 3, 1, info.max, 0], dtype)[:, None]
    negative = [-1] if info.min else []  # an unsigned amount is never negative
    amounts = np.array([*negative, 0, 1, 2, info.bits - 1, info.bits, info.bits + 5, 127], dtype)
    for name in ("left_shift", "right_shift"):
        expected = getattr(np, name)(x, amounts)
        for result in (getattr(snp, name)(x, amounts), spmd.jit(getattr(snp, name))(x, amounts)):
            assert result.dtype == expected.dtype
            np.testing.assert_array_equal(result, expected)


def test_shift_operators_and_their_reflections_match_numpy():
    x = np.array([-7, 0, 5, 100], np.int32)
    a = spmd.device_put(x)
    np.testing.assert_array_equal(a << 3, x << 3)
    np.testing.assert_array_equal(2 << (a % 5), 2 << (x % 5))
    np.testing.assert_array_equal(a >> 1, x >> 1)
    np.testing.assert_array_equal(1000 >> (a % 5), 1000 >> (x % 5))
    np.testing.assert_array_equal(spmd.jit(lambda v: (v << 2) >> 1)(x), (x << 2) >> 1)
    assert (a << 2).dtype == np.int32 and (a.astype(np.uint8) >> 1).dtype == np.uint8


def test_standard_names_are_numpys_functions():
    pairs = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
             "asinh": "arcsinh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power",
             "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
             "bitwise_right_shift": "right_shift"}  # fmt: skip
    for standard, numpy_name in pairs.items():
        assert getattr(snp, standard) is getattr(snp, numpy_name)
        assert standard in snp.__all__ and numpy_name in snp.__all__


def test_array_namespace_is_spmd_numpy_and_refuses_unknown_versions():
    a = spmd.device_put(np.ones(2))
    assert a.__array_namespace__() is snp and a.__array_namespace__(api_version="2023.12") is snp
    seen = []
    spmd.jit(lambda v: seen.append(v.__array_namespace__()) or v)(a)
    assert seen == [snp]
    with pytest.raises(spmd.SpmdValueError, match=r"api_version='1999.01'.*2023\.12"):
        a.__array_namespace__(api_version="1999.01")


def _central_difference(f, args, k, eps=1e-6):
    """df/d args[k] of a scalar f, elementwise by central differences (float64)."""
    grad = np.zeros_like(args[k])
    for index in np.ndindex(args[k].shape):
        shifted = [np.array(a, copy=True) for a in args]
        shifted[k][index] += eps
        up = f(*shifted)
        shifted[k][index] -= 2 * eps
        grad[index] = (up - f(*shifted)) / (2 * eps)
    return grad


@pytest.mark.parametrize(
    "name", ["hypot", "copysign", "logaddexp", "arctan2", "sinh", "cosh", "arcsinh",
             "arccosh", "arctanh", "log2", "log10", "square"],
)  # fmt: skip
def test_derivatives_in_every_operand_match_finite_differences(name):
    rng = np.random.default_rng(0)
    fn = getattr(snp, name)
    if name in ("arccosh",):
        args = [rng.uniform(1.2, 4, (3, 4))]
    elif name in ("arctanh",):
        args = [rng.uniform(-0.9, 0.9, (3, 4))]
    elif name in ("log2", "log10"):
        args = [rng.uniform(0.2, 4, (3, 4))]
    elif name in ("hypot", "copysign", "logaddexp", "arctan2"):
        args = [rng.uniform(-3, 3, (3, 4)), rng.uniform(-3, 3, (4,))]
    else:
        args = [rng.uniform(-3, 3, (3, 4))]
    weights = rng.normal(size=(3, 4))

    def loss(*xs):
        return snp.sum(fn(*xs) * weights)

    def numpy_loss(*xs):
        return float(np.sum(getattr(np, name)(*xs) * weights))

    grads = spmd.grad(loss, argnums=tuple(range(len(args))))(*args)
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, _central_difference(numpy_loss, args, k), atol=1e-6)
    jvp_out = spmd.jvp(loss, args, [np.ones_like(a) for a in args])[1]
    np.testing.assert_allclose(jvp_out, sum(np.sum(g) for g in grads), rtol=1e-10)


def test_derivatives_at_the_edges_follow_jax():
    # logaddexp(-inf, -inf) = -inf: JAX's rule reads infinities as 0, giving each operand 1
    g = spmd.grad(lambda a, b: snp.logaddexp(a, b), argnums=(0, 1))(-np.inf, -np.inf)
    assert [float(v) for v in g] == [1.0, 1.0]
    g = spmd.grad(lambda a, b: snp.hypot(a, b), argnums=(0, 1))(0.0, 0.0)  # no NaN at 0
    assert [float(v) for v in g] == [0.0, 0.0]
    copysign_grads = spmd.grad(lambda a, b: snp.copysign(a, b), argnums=(0, 1))
    assert [float(v) for v in copysign_grads(-2.0, 3.0)] == [-1.0, 0.0]
    assert [float(v) for v in copysign_grads(2.0, -0.0)] == [-1.0, 0.0]
    x = np.linspace(-1.3, 1.3, 3)
    for name in ("trunc", "isinf", "signbit", "logical_xor"):  # piecewise constant: no tangent
        args = (x, -x) if name == "logical_xor" else (x,)
        _, tangent = spmd.jvp(getattr(snp, name), args, [np.ones_like(a) for a in args])
        assert not np.any(np.asarray(tangent, dtype=float)), name
    grads = spmd.grad(lambda v: snp.sum(v * snp.trunc(v)))(x)  # the product rule's other half
    np.testing.assert_array_equal(grads, np.trunc(x))
