"""Indexing beyond the case table (tests/cases/): jit's clipping, messages, misuse."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.prims.indexing import SpmdIndexError


def check(result, expected):
    expected = np.asarray(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(result), expected)


def test_traced_out_of_range_indices_are_clipped_under_jit_as_in_jax():
    x = np.arange(5.0)
    result = spmd.jit(lambda a, i: a[i])(x, np.array([7, -9, -1, 2]))
    check(result, np.array([4.0, 0.0, 4.0, 2.0]))


@pytest.mark.parametrize(
    ("shape", "index", "pattern"),
    [
        ((3,), 3, "index 3 is out of bounds for axis 0 with size 3"),
        ((3, 4), (slice(None), -5), "index -5 is out of bounds for axis 1 with size 4"),
        ((3, 4), (Ellipsis, [0, 4]), "index 4 is out of bounds for axis 1 with size 4"),
        ((0,), [0], "index 0 is out of bounds for axis 0 with size 0"),
        ((3, 4), (0, 0, 0), r"too many indices: the array has shape \(3, 4\)"),
        ((3, 4), (Ellipsis, 0, Ellipsis), "single ellipsis"),
        ((3,), np.array([True, False]), "along axis 0: the axis has size 3 but the mask has"),
    ],
)
def test_index_errors_name_axis_index_and_size(shape, index, pattern):
    x = np.zeros(shape, np.float32)
    for fn in (lambda a: a[index], spmd.jit(lambda a: a[index])):
        with pytest.raises(SpmdIndexError, match=pattern) as info:
            fn(spmd.device_put(x))
        assert isinstance(info.value, IndexError) and isinstance(info.value, spmd.SpmdError)


def test_unsupported_indices_raise_type_errors_that_say_what_to_do():
    x = spmd.device_put(np.arange(6.0))
    with pytest.raises(spmd.SpmdTypeError, match=r"traced boolean mask bool\[6\].*where"):
        spmd.jit(lambda a: a[a > 2])(x)
    with pytest.raises(spmd.SpmdTypeError, match=r"got float 1\.5"):
        x[1.5]
    with pytest.raises(spmd.SpmdTypeError, match="got an array of float64"):
        x[np.array([1.0])]
    with pytest.raises(spmd.SpmdTypeError, match="slice starts must be static integers"):
        spmd.jit(lambda a, i: a[i:])(x, 2)
    with pytest.raises(spmd.ShapeError, match=r"could not be broadcast.*\(2,\), \(3,\)"):
        spmd.device_put(np.ones((3, 3)))[[0, 1], [0, 1, 2]]
    with pytest.raises(spmd.ShapeError, match="step 0"):
        x[::0]


def test_take_errors():
    x = spmd.device_put(np.arange(12).reshape(3, 4))
    with pytest.raises(SpmdIndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        snp.take(x, [0, 4], axis=1)
    with pytest.raises(SpmdIndexError, match="axis 2 is out of bounds for an array of 2"):
        snp.take(x, [0], axis=2)
    with pytest.raises(spmd.SpmdTypeError, match="mode='fill'"):
        snp.take(x, [0], mode="fill")
    clipped = spmd.jit(lambda a, i: snp.take(a, i, axis=0))(x, np.array([5, -1]))
    check(clipped, np.asarray(x)[[2, 2]])


@pytest.mark.parametrize(
    "index",
    [True, False, np.True_, np.array(False), (0, True), ([0, 1, 4], True), (True, [2, 0]),
     (Ellipsis, True), (True, Ellipsis, False), (slice(None), True, [2, 0]), (None, True),
     (True, True), (1, True, 2), (np.array([True, False, True, False, True]), True)],
)  # fmt: skip
def test_a_0d_boolean_index_adds_an_axis_of_length_1_or_0_as_numpy(index):
    x = np.arange(15).reshape(5, 3)  # 5 rows: uneven on 8 devices
    mesh = spmd.make_mesh((8,), ("x",))
    sharded = spmd.device_put(x, spmd.NamedSharding(mesh, spmd.P("x")))
    expected = x[index]
    for got in (snp.asarray(x)[index], sharded[index], spmd.jit(lambda v: v[index])(sharded)):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
