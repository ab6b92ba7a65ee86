"""sort, argsort, cumprod, diagonal, trace, real, imag and conj beyond the case table: stated
values, where sharded work stays split, and what the errors say."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.debug import count_collectives


def rows_over(mesh_size: int, x: np.ndarray):
    mesh = spmd.make_mesh((mesh_size,), ("x",))
    return spmd.device_put(x, NamedSharding(mesh, P("x")))


def test_argsort_keeps_ties_in_their_original_order_eagerly_and_under_jit():
    x = np.array([2, 1, 2, 0, 1, 2, 0])
    stable = [3, 6, 1, 4, 0, 2, 5]
    assert snp.argsort(x).tolist() == stable
    assert spmd.jit(snp.argsort)(x).tolist() == stable
    assert snp.argsort(x, kind="quicksort").tolist() == stable  # any kind gives the stable order
    assert rows_over(8, x).argsort().tolist() == stable  # 7 over 8 devices: uneven and empty


def test_sort_puts_nan_last_and_orders_complex_by_real_then_imaginary_part():
    assert snp.sort(np.array([np.nan, 1.0, -np.inf, 0.5])).tolist()[:3] == [-np.inf, 0.5, 1.0]
    assert np.isnan(snp.sort(np.array([np.nan, 1.0]))[1].item())
    z = np.array([1 + 2j, 1 - 1j, 0 + 5j])
    assert snp.sort(z).tolist() == [5j, 1 - 1j, 1 + 2j]


def test_the_sort_method_returns_a_sorted_copy_and_leaves_the_array_alone():
    a = spmd.device_put(np.array([[3, 1, 2], [0, 5, 4]]))
    assert a.sort().tolist() == [[1, 2, 3], [0, 4, 5]]
    assert a.sort(axis=None).tolist() == [0, 1, 2, 3, 4, 5]
    assert a.tolist() == [[3, 1, 2], [0, 5, 4]]


def test_sorting_along_an_unsplit_axis_keeps_the_split_and_moves_nothing():
    x = np.arange(40.0)[::-1].reshape(5, 8)  # 5 rows over 8 devices
    a = rows_over(8, x)
    for fn, expected in [
        (lambda v: snp.sort(v, axis=1), np.sort(x, axis=1)),
        (lambda v: snp.argsort(v, axis=-1), np.argsort(x, axis=-1, kind="stable")),
        (lambda v: snp.cumprod(v, axis=1), np.cumprod(x, axis=1)),
    ]:
        with count_collectives() as counts:
            result = spmd.jit(fn)(a)
        assert counts.total == 0, counts
        assert result.sharding.spec == P("x")
        np.testing.assert_array_equal(result, expected)


def test_sorting_along_the_split_axis_gathers_it_first():
    x = np.array([[5.0, 1.0], [4.0, 2.0], [3.0, 3.0], [2.0, 0.0]])
    with count_collectives() as counts:
        result = spmd.jit(lambda v: snp.sort(v, axis=0))(rows_over(4, x))
    assert counts["all-gather"] == 1
    assert result.tolist() == [[2.0, 0.0], [3.0, 1.0], [4.0, 2.0], [5.0, 3.0]]


def test_the_main_diagonal_of_row_split_matrices_stays_split_and_trace_sums_it_once():
    x = np.arange(64.0).reshape(8, 8)
    a = rows_over(8, x)
    diagonal = spmd.jit(snp.diagonal)(a)
    assert diagonal.sharding.spec == P("x")
    assert diagonal.tolist() == [0.0, 9.0, 18.0, 27.0, 36.0, 45.0, 54.0, 63.0]
    with count_collectives() as counts:
        trace = spmd.jit(snp.trace)(a)
    assert trace.item() == 252.0
    assert counts["all-reduce"] == 1 and counts["all-gather"] == 0, counts


def test_diagonal_offsets_and_axes_match_numpy():
    x = np.arange(24).reshape(2, 3, 4)
    assert snp.diagonal(x, 1, 1, 2).tolist() == [[1, 6, 11], [13, 18, 23]]
    assert snp.diagonal(x, -1, 2, 1).tolist() == [[1, 6, 11], [13, 18, 23]]
    assert snp.diagonal(x, 5, 1, 2).shape == (2, 0)
    assert snp.trace(x, 0, 0, 2).tolist() == [13, 21, 29]  # x[0, j, 0] + x[1, j, 1]
    assert snp.trace(np.ones((3, 3), np.int32)).dtype == np.int64  # sum's dtype, as NumPy
    assert spmd.device_put(x).trace(1, 1, 2, dtype=np.float32).dtype == np.float32


def test_real_imag_and_conj_of_complex_arrays_on_a_mesh():
    z = np.array([1 + 2j, 3 - 4j, -5j, 6.0, 7 + 1j], np.complex64)
    a = rows_over(8, z)
    assert a.real.dtype == np.float32 and a.real.tolist() == [1.0, 3.0, 0.0, 6.0, 7.0]
    assert a.imag.tolist() == [2.0, -4.0, -5.0, 0.0, 1.0]
    assert a.conj().tolist() == [1 - 2j, 3 + 4j, 5j, 6.0, 7 - 1j]
    f = spmd.jit(lambda v: (v.real, v.imag, snp.conjugate(v)))
    real, imag, conj = f(a)
    assert real.sharding.spec == P("x") and conj.dtype == np.complex64
    assert (real.tolist(), imag.tolist()) == (a.real.tolist(), a.imag.tolist())


def test_conj_of_a_real_array_is_the_array_but_numpy_conj_of_bools_is_int8():
    b = spmd.device_put(np.array([True, False]))
    assert b.conj() is b and b.conjugate().dtype == np.bool_
    assert snp.conj(b).dtype == np.int8 and snp.imag(b).tolist() == [False, False]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: snp.sort(np.float64(1.0)), spmd.ShapeError, "pass axis=None"),
        (lambda: snp.sort(np.ones(3), kind="fast"), spmd.SpmdValueError, "kind='fast'"),
        (lambda: snp.argsort(np.ones(3), kind=1), spmd.SpmdTypeError, "must be a string"),
        (lambda: snp.sort(np.ones(3), kind="stable", stable=True), spmd.SpmdValueError, "Drop"),
        (lambda: snp.argsort(np.ones(3), order="f"), spmd.SpmdValueError, "drop order"),
        (lambda: snp.sort(np.ones((2, 2)), axis=(0, 1)), spmd.SpmdTypeError, "one axis"),
        (lambda: snp.cumprod(np.ones(3), axis=1), spmd.ShapeError, "axis=1 is out of bounds"),
        (lambda: snp.diagonal(np.ones(3)), spmd.ShapeError, "at least 2.*x.reshape"),
        (lambda: snp.trace(np.ones((2, 2)), 0, 1, -1), spmd.ShapeError, "axis2=-1 are the same"),
        (lambda: snp.diagonal(np.ones((2, 2)), 0, 0, 2), spmd.ShapeError, "axis2=2 is out"),
        (lambda: snp.diagonal(np.ones((2, 2)), 0.5), spmd.SpmdTypeError, "offset must be"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_fix(call, error, message):
    with pytest.raises(error, match=message):
        call()
