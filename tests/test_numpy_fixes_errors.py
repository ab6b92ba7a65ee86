"""Issue 22, items 2 and 7, found by the differential suite (tests/test_differential.py): huge
allocations, full's fill that does not broadcast, array_equal/array_equiv of Python lists, and
spmd.nn of integers and bools; each against NumPy 2, eagerly, under jit and sharded."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import ShapeError, SpmdError, SpmdMemoryError, SpmdValueError
from tests.cases import assert_matches
from tests.modes import MODES, run

# --- allocations too big for this process ---------------------------------------------------

HUGE = [
    ("zeros", lambda: snp.zeros(10**12), r"\(1000000000000,\).*float64.*7\.3 TiB"),
    ("ones", lambda: snp.ones((10**6, 10**6), np.int8), r"\(1000000, 1000000\).*int8.*931\.3 GiB"),
    ("empty", lambda: snp.empty(10**12, np.float32), r"\(1000000000000,\).*float32.*3\.6 TiB"),
    ("full", lambda: snp.full(10**12, 7), r"\(1000000000000,\).*int64.*8,000,000,000,000 bytes"),
    ("full", lambda: snp.full(10**12, np.ones(1)), r"\(1000000000000,\).*float64"),
    ("zeros_like", lambda: snp.zeros_like(np.ones(3), shape=10**12), r"float64.*7\.3 TiB"),
    ("eye", lambda: snp.eye(10**6), r"\(1000000, 1000000\).*float64.*7\.3 TiB"),
    ("arange", lambda: snp.arange(10**12), r"\(1000000000000,\).*int64.*7\.3 TiB"),
    ("linspace", lambda: snp.linspace(0, 1, 10**12), r"\(1000000000000,\).*float64"),
]


@pytest.mark.parametrize(
    ("fn", "make", "sizes"), HUGE, ids=[f"{h[0]}-{i}" for i, h in enumerate(HUGE)]
)
def test_an_allocation_too_big_raises_spmd_memory_error_with_its_size_and_the_fix(fn, make, sizes):
    with pytest.raises(SpmdMemoryError, match=sizes) as caught:
        make()
    message = str(caught.value)
    assert message.startswith(f"spmd.numpy.{fn}: ")
    assert "more than this process can allocate" in message
    assert "out_sharding=NamedSharding" in message and "smaller dtype" in message
    assert isinstance(caught.value, MemoryError) and isinstance(caught.value, SpmdError)


def test_a_size_beyond_any_address_space_raises_a_value_error_as_numpy_does():
    with pytest.raises(ValueError):
        np.zeros(10**20)
    with pytest.raises(SpmdValueError, match=r"zeros: .*\(100000000000000000000,\).*EiB"):
        snp.zeros(10**20)


def test_spmd_memory_error_is_exported_with_the_other_errors():
    assert spmd.SpmdMemoryError is SpmdMemoryError
    assert "SpmdMemoryError" in spmd.__all__


# --- full -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_full_refuses_a_fill_that_does_not_broadcast_naming_both_shapes(mode):
    with pytest.raises(ValueError):
        np.full((0, 0), np.array([False, False]))
    with pytest.raises(ShapeError, match=r"fill_value bool\[2\] does not fit shape \(0, 0\)"):
        run(mode, lambda fill: snp.full((0, 0), fill), np.array([False, False]))


@pytest.mark.parametrize("mode", MODES)
def test_full_drops_a_fill_s_leading_ones_as_numpy_does(mode):
    fill = np.array([[1.5, -2.0]])
    result = run(mode, lambda f: snp.full((3, 2), f), fill)
    assert_matches(result, np.full((3, 2), fill))
    assert_matches(run(mode, lambda f: snp.full((), f), np.array([[4]])), np.array(4))


# --- array_equal / array_equiv with Python lists --------------------------------------------

LISTS = [
    (np.array([1.0, 2.0, 3.0]), [1.0, 2.0, 3.0]),
    (np.array([1.0, 2.0, 3.0]), [1, 2, 4]),
    (np.array([1, 2]), [[1, 2], [1, 2]]),
    (np.array([1, 2]), [[1, 2, 1, 2]]),
    (np.array([np.nan, 1.0]), [np.nan, 1.0]),
    (np.array([True, False]), (1, 0)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", ["array_equal", "array_equiv"])
def test_array_equal_and_equiv_take_python_lists_as_numpy_does(mode, fn):
    spmd_fn, numpy_fn = getattr(snp, fn), getattr(np, fn)
    for array, values in LISTS:
        first = run(mode, lambda a, v=values: spmd_fn(a, v), array)
        second = run(mode, lambda a, v=values: spmd_fn(v, a), array)
        assert (bool(first), bool(second)) == (numpy_fn(array, values), numpy_fn(values, array))
    assert bool(snp.array_equal([1.0, np.nan], [1.0, np.nan], equal_nan=True)) is True
    assert bool(snp.array_equal([1, [2, 3]], [1, 2])) is False  # ragged: NumPy says False


# --- spmd.nn of integers and bools --------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_softmax_family_of_integers_computes_in_numpy_s_float_without_wrapping(mode):
    x = np.array([127, -3], np.int8)
    softmax = run(mode, spmd.nn.softmax, x)
    assert softmax.dtype == np.float16  # np.exp(int8) is float16
    np.testing.assert_allclose(np.asarray(softmax, np.float64), [1.0, 0.0], atol=1e-3)
    log_softmax = run(mode, spmd.nn.log_softmax, np.array([0, 1], np.uint8))
    assert log_softmax.dtype == np.float16
    expected = np.array([0.0, 1.0]) - np.log(1 + np.e)
    np.testing.assert_allclose(np.asarray(log_softmax, np.float64), expected, rtol=2e-3)
    lse = run(mode, spmd.nn.logsumexp, np.array([30000, 30000], np.int16))
    assert lse.dtype == np.float32 and float(lse) == pytest.approx(30000 + np.log(2), rel=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32])
def test_gelu_and_logsumexp_of_bools_and_integers_give_numpy_s_float_dtype(mode, dtype):
    x = np.array([1, 0, 1], dtype)
    expected = np.exp(x).dtype  # float16 for bool and 8 bits, float32 for 16, float64 for 32
    functions = [spmd.nn.gelu, spmd.nn.logsumexp]
    functions += [spmd.nn.sigmoid] if dtype != np.bool_ else []  # it refuses bools, as -x does
    for fn in functions:
        assert run(mode, fn, x).dtype == expected, fn.__name__


def test_softmax_of_bools_is_refused_naming_the_argument():
    with pytest.raises(spmd.SpmdTypeError, match=r"softmax does not support bool\[2\].*astype"):
        spmd.nn.softmax(np.array([True, False]))


# --- take from empty axes -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_take_with_an_empty_result_looks_at_no_index_as_numpy_does(mode):
    cases = [  # (shape, indices, axis, take mode): NumPy gives an empty result, checking nothing
        ((0, 0), [0], 1, "raise"),  # nothing before the axis: no index is looked at
        ((0, 0), [5], 0, "clip"),  # an empty axis, but nothing to take from it either
        ((3, 0), [-9], 0, "wrap"),
        ((0, 2), [], 0, "wrap"),
    ]
    for shape, indices, axis, how in cases:
        x, where = np.zeros(shape, np.float32), np.array(indices, np.int64)
        expected = np.take(x, where, axis=axis, mode=how)
        result = run(mode, lambda a, i, ax=axis, m=how: snp.take(a, i, axis=ax, mode=m), x, where)
        assert_matches(result, expected)


def test_take_refuses_a_non_empty_take_from_an_empty_axis_as_numpy_does():
    with pytest.raises(IndexError):
        np.take(np.zeros((0, 2)), [5], axis=0, mode="clip")
    with pytest.raises(
        spmd.SpmdIndexError, match=r"mode='clip' from axis 0 of size 0 of f64\[0,2\]"
    ):
        snp.take(np.zeros((0, 2)), [5], axis=0, mode="clip")


# --- einsum summing over an empty axis ------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_einsum_summing_over_an_empty_axis_is_zero_even_beside_nan(mode):
    cases = [  # a pairwise contraction would multiply the empty sum (0) by NaN
        ("i,->", np.zeros(0), np.array(np.nan)),
        ("i,j->j", np.zeros(0), np.array([np.nan, 1.0])),
        (",i,->", np.array(False), np.zeros(0, bool), np.array(np.nan + 1j, np.complex64)),
    ]
    for spec, *operands in cases:
        expected = np.einsum(spec, *operands)
        result = run(mode, lambda *xs, s=spec: snp.einsum(s, *xs), *operands)
        assert_matches(result, expected)
        assert not np.isnan(np.asarray(result)).any()


def test_result_type_and_can_cast_take_spmd_arrays():
    import spmd.numpy as snp

    x = snp.asarray(np.ones(3, np.float32))
    assert snp.result_type(x, 1.0) == np.float32  # a Python float is weak, as in NumPy
    assert snp.result_type(x, np.float64) == np.float64
    assert np.result_type(x, 2) == np.float32  # NumPy's own dispatches to spmd's
    assert snp.can_cast(x, np.float64) and not snp.can_cast(x, np.int8)
