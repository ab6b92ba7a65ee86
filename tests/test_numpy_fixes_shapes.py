"""Issue 22's wrong values and refusals in spmd.numpy creation, shape and indexing functions
and spmd.lax slicing, each against NumPy 2 (JAX's documented rules for lax): eagerly, under
jit, and on arrays split unevenly over 8 devices (5 elements on 8)."""

import warnings

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from tests.cases import assert_matches
from tests.modes import MODES, put, run

# ------------------------------------------ item 6: shape, ndim, size as functions


@pytest.mark.parametrize("mode", MODES)
def test_numpy_shape_ndim_size_of_spmd_values_as_numpy(mode):
    x = np.arange(15.0).reshape(5, 3)

    def sizes(v):
        info = (np.shape(v), np.ndim(v), np.size(v), np.size(v, -1))
        mine = (snp.shape(v), snp.ndim(v), snp.size(v), snp.size(v, 0))
        return snp.asarray(v) * 0 + float(info == ((5, 3), 2, 15, 3) and mine == ((5, 3), 2, 15, 5))

    assert_matches(run(mode, sizes, x), np.ones((5, 3)))
    assert (snp.shape(2.0), snp.ndim([[1, 2]]), snp.size([[1, 2]])) == ((), 2, 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shift, axis", [(0, None), (5, 0), (-7, None), (2, -1), ((1, 4), (0, 0))])
def test_roll_equals_numpy_and_gives_an_spmd_array(mode, shift, axis):
    x = np.arange(5) * 3
    assert_matches(run(mode, lambda v: snp.roll(v, shift, axis), x), np.roll(x, shift, axis))
    assert_matches(snp.roll([1, 2], 0), np.array([1, 2]))


# ------------------------------------------ item 2: values a dtype cannot hold


@pytest.mark.parametrize(
    "make, value, dtype, builtin",
    [
        (snp.array, [300], np.int8, OverflowError),
        (snp.array, [1, -1], np.uint8, OverflowError),
        (snp.array, 1 + 2j, np.float64, TypeError),
        (snp.asarray, float("nan"), np.int32, ValueError),
        (snp.asarray, [1.5, float("inf")], np.int16, OverflowError),
    ],
)
def test_python_values_a_dtype_cannot_hold_raise_as_numpy(make, value, dtype, builtin):
    with pytest.raises(builtin):
        getattr(np, make.__name__)(value, dtype=dtype)
    name = np.dtype(dtype).name
    argument = "object" if make is snp.array else "a"
    pattern = rf"{make.__name__}: {argument}=.* cannot become {name}: .* NumPy 2 refuses"
    for call in (lambda: make(value, dtype=dtype), spmd.jit(lambda: make(value, dtype=dtype))):
        with pytest.raises(builtin, match=pattern) as caught:
            call()
        assert isinstance(caught.value, spmd.SpmdError)


def test_arrays_and_numpy_scalars_are_cast_as_numpy_casts_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for value, dtype in [
            (np.array([300, -129]), np.int8),
            (np.int64(300), np.int8),
            (np.array([1.0 + 2j]), np.float64),
            (np.float64("nan"), np.int32),
            (put(np.array([300, 2, 3, 4, 5])), np.uint8),
        ]:
            expected = np.asarray(np.asarray(value), dtype=dtype)
            assert_matches(snp.asarray(value, dtype=dtype), expected)
            assert_matches(snp.array(value, dtype=dtype), expected)


# ------------------------------------------ item 3: linspace


LINSPACE_KEYWORDS = [
    {},
    {"num": 4, "endpoint": False},
    {"num": 1},
    {"num": 0},
    {"num": 6, "dtype": np.int32},
    {"num": 3, "axis": -1},
    {"num": 3, "axis": 1, "dtype": np.float32},
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("keywords", LINSPACE_KEYWORDS)
@pytest.mark.parametrize("stop", [np.float32(7.0), np.array([2.0, 2, 2, 2, 2])])
def test_linspace_of_array_bounds_equals_numpy(mode, keywords, stop):
    start = np.array([0.0, 1.0, -2.0, 3.0, 5.0], np.float32)
    expected = np.linspace(start, stop, **keywords)
    length = 50 if not keywords.get("num") else keywords["num"]
    scale = 4 * length  # start + i * step rounds once per term, step from one division
    got = run(mode, lambda s: snp.linspace(s, stop, **keywords), start)
    assert_matches(got, expected, scale=scale)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num, endpoint", [(5, True), (4, False), (1, True), (1, False), (0, True)])
def test_linspace_retstep_equals_numpy(mode, num, endpoint):
    start = np.array([0.0, 1.0, -2.0, 3.0, 5.0])
    values, step = np.linspace(start, 9.0, num, endpoint, retstep=True)
    got_values, got_step = run(
        mode, lambda s: snp.linspace(s, 9.0, num, endpoint, retstep=True), start
    )
    assert_matches(got_values, values, scale=8)
    assert_matches(got_step, np.asarray(step), scale=2)
    scalar_values, scalar_step = snp.linspace(0, 1, num, endpoint, retstep=True)
    expected_values, expected_step = np.linspace(0, 1, num, endpoint, retstep=True)
    assert_matches(scalar_values, expected_values)
    assert_matches(scalar_step, np.asarray(expected_step))


# ------------------------------------------ item 4: creation keywords


@pytest.mark.parametrize("mode", MODES)
def test_like_functions_take_shape_and_dtype(mode):
    x = np.arange(5, dtype=np.int8)
    for name, extra in [("zeros_like", ()), ("ones_like", ()), ("full_like", (300.7,))]:
        for keywords in [{"shape": (2, 3)}, {"shape": 4, "dtype": np.float32}, {"shape": ()}]:
            expected = getattr(np, name)(x, *extra, **keywords)
            got = run(mode, lambda v, n=name, e=extra, k=keywords: getattr(snp, n)(v, *e, **k), x)
            assert_matches(got, expected)
    got = run(mode, lambda v: snp.empty_like(v, shape=(3, 1), dtype=bool), x)
    assert_matches(got, np.zeros((3, 1), bool))  # empty's values are zeros, as in JAX


@pytest.mark.parametrize("ndmin", [0, 1, 2, 4])
def test_array_ndmin_prepends_axes_as_numpy(ndmin):
    for value in (3.0, [1, 2], np.ones((2, 3), np.int8), put(np.arange(5))):
        expected = np.array(np.asarray(value), ndmin=ndmin)
        assert_matches(snp.array(value, ndmin=ndmin), expected)
    traced = spmd.jit(lambda v: snp.array(v, ndmin=ndmin))(np.arange(5))
    assert_matches(traced, np.array(np.arange(5), ndmin=ndmin))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["C", "F", "A", None])
@pytest.mark.parametrize("shape", [(6, 5), (3, 10), (-1,), (5, 3, 2), (2, -1, 1)])
def test_reshape_and_ravel_orders_equal_numpy(mode, order, shape):
    x = np.arange(30).reshape(5, 6)  # 5 rows: uneven on 8 devices
    expected = np.reshape(x, shape, order=order)
    assert_matches(run(mode, lambda v: snp.reshape(v, shape, order=order), x), expected)
    assert_matches(run(mode, lambda v: snp.ravel(v, order=order), x), np.ravel(x, order=order))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_ravel_of_uneven_and_fortran_arrays_equals_numpy(mode, order):
    x = np.arange(15).reshape(5, 3)
    assert_matches(run(mode, lambda v: snp.ravel(v, order=order), x), np.ravel(x, order=order))
    f = np.asfortranarray(x)
    assert_matches(snp.ravel(f, order=order), np.ravel(f, order=order))
    assert_matches(snp.reshape(f, (3, 5), order="A"), np.reshape(f, (3, 5), order="A"))
    reversed_columns = x[:, ::-1]
    assert_matches(snp.ravel(reversed_columns, order="K"), np.ravel(reversed_columns, order="K"))


def test_bad_orders_raise_value_errors_as_numpy():
    x = np.ones((2, 2))
    with pytest.raises(ValueError):
        np.reshape(x, 4, order="K")
    with pytest.raises(spmd.SpmdValueError, match=r"reshape: order must be one of 'C', 'F', 'A'"):
        snp.reshape(x, 4, order="K")
    with pytest.raises(spmd.SpmdValueError, match=r"ravel: order must be one of .* \(got 'Q'\)"):
        snp.ravel(x, order="Q")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "dtype, casting",
    [(None, "same_kind"), (np.float32, "same_kind"), (np.int8, "unsafe"), (None, "safe")],
)
def test_concatenate_and_stack_take_dtype_and_casting(mode, dtype, casting):
    a = np.array([1.5, -2.0, 300.0, 4.0, 5.0])
    b = np.arange(5, dtype=np.int32)
    for fn in ("concatenate", "stack"):
        expected = getattr(np, fn)([a, b], dtype=dtype, casting=casting)
        got = run(
            mode, lambda x, y, f=fn: getattr(snp, f)([x, y], dtype=dtype, casting=casting), a, b
        )
        assert_matches(got, expected)
    flat = np.concatenate([a.reshape(1, 5), b], axis=None, dtype=np.float32)
    assert_matches(snp.concatenate([a.reshape(1, 5), b], axis=None, dtype=np.float32), flat)
    assert_matches(snp.stack([1.5, 2], dtype=np.float32), np.stack([1.5, 2], dtype=np.float32))


@pytest.mark.parametrize("fn", ["concatenate", "stack"])
@pytest.mark.parametrize(
    "dtype, casting", [(np.int32, "same_kind"), (None, "no"), (np.float32, "safe")]
)
def test_casts_numpy_refuses_raise_type_errors(fn, dtype, casting):
    a, b = np.ones(2), np.ones(2, np.int32)
    with pytest.raises(TypeError):
        getattr(np, fn)([a, b], dtype=dtype, casting=casting)
    with pytest.raises(spmd.SpmdTypeError, match=rf"{fn}: cannot cast arrays\[\d\] .* rule '"):
        getattr(snp, fn)([a, b], dtype=dtype, casting=casting)
    with pytest.raises(spmd.SpmdValueError, match="casting must be one of"):
        getattr(snp, fn)([a, b], casting="bad")


@pytest.mark.parametrize("mode", MODES)
def test_nonzero_equals_numpy_and_takes_size_under_jit(mode):
    x = np.array([0.0, 3.0, 0.0, -1.0, 2.0])
    grid = np.array([[0, 1, 0], [2, 0, 3], [0, 0, 4], [5, 0, 0], [0, 0, 0]])
    for value in (x, grid, np.zeros((0, 3)), np.zeros(5, bool)):
        expected = np.nonzero(value)
        if mode != "jit":
            assert_matches(run(mode, snp.nonzero, value), expected)
        for size, fill in [(len(expected[0]), None), (2, None), (7, -1), (0, 5)]:
            padded = tuple(
                np.concatenate([e[:size], np.full(max(0, size - len(e)), fill or 0, np.intp)])
                for e in expected
            )
            got = run(mode, lambda v, n=size, f=fill: snp.nonzero(v, size=n, fill_value=f), value)
            assert_matches(got, padded)


def test_nonzero_refusals():
    with pytest.raises(spmd.SpmdTypeError, match=r"nonzero: a is a traced i64\[5\].* size="):
        spmd.jit(snp.nonzero)(np.arange(5))
    # NumPy 2.1+ refuses a 0-d array too (2.0 only warns); JAX always refuses it.
    with pytest.raises(spmd.SpmdValueError, match="nonzero: a is 0-d"):
        snp.nonzero(np.array(1.0))
    with pytest.raises(spmd.ShapeError, match="fill_value has 3 entries, but a has 2"):
        snp.nonzero(np.ones((2, 2)), size=5, fill_value=(1, 2, 3))


# ------------------------------------------ item 5: axis 0 / -1 of 0-d arrays


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.squeeze(x, 0),
        lambda m, x: m.squeeze(x, -1),
        lambda m, x: m.squeeze(x, ()),
        lambda m, x: m.repeat(x, 3, 0),
        lambda m, x: m.repeat(x, [2], -1),
        lambda m, x: m.repeat(x, 0, axis=0),
        lambda m, x: m.take(x, 0, 0),
        lambda m, x: m.take(x, [0, -1], -1),
        lambda m, x: m.take(x, [[0]], axis=0),
        lambda m, x: m.take(x, [4, -7], 0, mode="wrap"),
        lambda m, x: m.take(x, 9, -1, mode="clip"),
    ],
)
def test_axis_0_or_minus_1_of_a_0d_array_as_numpy(mode, call):
    x = np.array(2.5)
    assert_matches(run(mode, lambda v: call(snp, v), x), call(np, x))


@pytest.mark.parametrize(
    "call, builtin, error",
    [
        (lambda m, x: m.squeeze(x, 1), ValueError, spmd.ShapeError),
        (lambda m, x: m.squeeze(x, (0,)), ValueError, spmd.ShapeError),
        (lambda m, x: m.repeat(x, 2, 1), ValueError, spmd.ShapeError),
        (lambda m, x: m.take(x, 0, 1), IndexError, spmd.SpmdError),
        (lambda m, x: m.take(x, 1, 0), IndexError, spmd.SpmdError),
    ],
)
def test_other_axes_of_a_0d_array_raise_as_numpy(call, builtin, error):
    x = np.array(2.5)
    with pytest.raises(builtin):
        call(np, x)
    for fn in (lambda v: call(snp, v), spmd.jit(lambda v: call(snp, v))):
        with pytest.raises(builtin) as caught:
            fn(x)
        assert isinstance(caught.value, error)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "shape, shift, axis",
    [((0, 3), 1, ()), ((0,), 2, 0), ((0,), 0, ()), ((5, 3), 1, ()), ((5, 3), [], []),
     ((5, 3), (1, -1), (1, 1)), ((5, 3), 7, (0, 1)), ((5, 3), (1, 2), 1), ((0, 3), 4, None)],
)  # fmt: skip
def test_roll_of_empty_arrays_and_empty_axes_equals_numpy(mode, shape, shift, axis):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    expected = np.roll(x, shift, axis)
    assert_matches(run(mode, lambda v: snp.roll(v, shift, axis), x), expected)


def test_roll_refuses_what_numpy_refuses():
    with pytest.raises(ValueError):
        np.roll(np.array(1.0), 1, ())
    with pytest.raises(spmd.SpmdValueError, match=r"roll: axis=\(\) of the 0-d f64\[\]"):
        snp.roll(np.array(1.0), 1, ())
    with pytest.raises(ValueError):
        np.roll(np.ones((2, 3)), (1, 2), ())
    with pytest.raises(spmd.ShapeError, match=r"shift \(1, 2\) and axis \(\) must have"):
        snp.roll(np.ones((2, 3)), (1, 2), ())
