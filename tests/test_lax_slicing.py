"""lax.dynamic_slice and kin against NumPy slicing with JAX's negative starts and clamping,
traced or known starts."""

import numpy as np
import pytest

import spmd
from spmd import lax


def clamp(start: int, length: int, size: int) -> int:
    """JAX's start: a negative one counts from the end, then clamped to keep the block inside."""
    start = start + length if start < 0 else start
    return min(max(start, 0), length - size)


@pytest.mark.parametrize("traced", [False, True])
def test_dynamic_slice_and_update_equal_numpy_with_clamped_starts(traced):
    rng = np.random.default_rng(14)
    mesh = spmd.make_mesh((2, 4), ("a", "b"))
    for _ in range(20):
        shape = tuple(int(n) for n in rng.integers(1, 7, size=rng.integers(1, 4)))
        x = rng.standard_normal(shape)
        sizes = tuple(int(rng.integers(0, n + 1)) for n in shape)
        starts = tuple(int(rng.integers(-n - 3, n + 3)) for n in shape)
        where = tuple(clamp(s, n, k) for s, n, k in zip(starts, shape, sizes, strict=True))
        block = tuple(slice(s, s + k) for s, k in zip(where, sizes, strict=True))
        update = rng.standard_normal(sizes)
        expected = x.copy()
        expected[block] = update
        if traced:
            got = spmd.jit(lambda v, *s, sizes=sizes: lax.dynamic_slice(v, s, sizes))(x, *starts)
            put = spmd.jit(lambda v, u, *s: lax.dynamic_update_slice(v, u, s))(x, update, *starts)
        else:
            sharded = spmd.device_put(x, spmd.NamedSharding(mesh, spmd.P("a")))
            got = lax.dynamic_slice(sharded, starts, sizes)
            put = lax.dynamic_update_slice(sharded, update, starts)
        np.testing.assert_array_equal(got, x[block], err_msg=f"{shape} {starts} {sizes}")
        np.testing.assert_array_equal(put, expected, err_msg=f"{shape} {starts} {sizes}")


def test_in_dim_forms():
    x = np.arange(20.0).reshape(5, 4)
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(x, 2, 2, axis=1), x[:, 2:4])
    np.testing.assert_array_equal(spmd.jit(lax.dynamic_index_in_dim)(x, 4), x[4:5])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(x, 1, 1, keepdims=False), x[:, 1])
    updated = lax.dynamic_update_slice_in_dim(x, np.zeros((5, 1)), 9, axis=1)
    np.testing.assert_array_equal(updated, np.concatenate([x[:, :3], np.zeros((5, 1))], axis=1))


def test_bad_starts_and_sizes_name_the_operand():
    x = np.zeros((3, 4))
    with pytest.raises(spmd.ShapeError, match="dynamic_slice: the operand has 2 dimensions"):
        lax.dynamic_slice(x, (0,), (1, 1))
    with pytest.raises(spmd.ShapeError, match="size 5 along dimension 1 does not fit"):
        lax.dynamic_slice(x, (0, 0), (1, 5))


def test_negative_starts_count_from_the_end_as_in_jax():
    x = np.array([-1, 3, -4, -2, 1])
    mesh = spmd.make_mesh((8,), ("x",))
    sharded = spmd.device_put(x, spmd.NamedSharding(mesh, spmd.P("x")))  # 5 elements on 8
    traced = spmd.jit(lambda v, i: lax.dynamic_slice(v, [i], (1,)))
    for got in (lax.dynamic_slice(x, [-4], (1,)), traced(x, -4), traced(sharded, np.int8(-4))):
        assert isinstance(got, spmd.Array) and got.tolist() == [3]
    assert lax.dynamic_slice(x, [-4], (1,), allow_negative_indices=False).tolist() == [-1]
    assert lax.dynamic_slice(x, [-9], (2,)).tolist() == [-1, 3]  # -9 + 5 = -4, clamped to 0
    assert lax.dynamic_slice_in_dim(sharded, -2, 2).tolist() == [-2, 1]
    assert lax.dynamic_index_in_dim(x, -1, keepdims=False).tolist() == 1
    expected = np.zeros(7)
    expected[4] = 1.0
    update = spmd.jit(lambda v, u, i: lax.dynamic_update_slice(v, u, [i]))
    zeros = spmd.device_put(np.zeros(7), spmd.NamedSharding(mesh, spmd.P("x")))
    for got in (
        lax.dynamic_update_slice(np.zeros(7), np.ones(1), [-3]),
        lax.dynamic_update_slice(zeros, np.ones(1), (-3,)),
        lax.dynamic_update_slice_in_dim(zeros, np.ones(1), -3, axis=0),
        update(np.zeros(7), np.ones(1), -3),
        update(zeros, np.ones(1), np.int32(-3)),
    ):
        assert isinstance(got, spmd.Array)
        np.testing.assert_array_equal(got, expected)


def test_results_are_spmd_arrays_also_for_numpy_list_and_scalar_operands():
    whole = lax.dynamic_slice(np.arange(3), [0], [3])
    assert isinstance(whole, spmd.Array) and whole.tolist() == [0, 1, 2]
    listed = lax.dynamic_slice([1, 2, 3], np.array([1]), [2])
    assert isinstance(listed, spmd.Array) and listed.tolist() == [2, 3]
    scalar = lax.dynamic_slice(3.0, [], [])  # a 0-d operand takes no starts, as in JAX
    assert isinstance(scalar, spmd.Array) and scalar.shape == () and float(scalar) == 3.0
    empty = lax.dynamic_update_slice(np.arange(3), np.zeros(0, int), [0])
    assert isinstance(empty, spmd.Array) and empty.tolist() == [0, 1, 2]


def test_traced_float_start_is_a_clear_error():
    with pytest.raises(spmd.SpmdTypeError, match="start indices must be integers; got a traced"):
        spmd.jit(lambda v, i: lax.dynamic_slice(v, [i], (1,)))(np.zeros(3), 1.0)


def test_dynamic_update_index_in_dim_takes_an_update_without_the_axis():
    from spmd.lax.slicing import dynamic_update_index_in_dim

    x = np.arange(15.0).reshape(5, 3)
    mesh = spmd.make_mesh((8,), ("x",))
    sharded = spmd.device_put(x, spmd.NamedSharding(mesh, spmd.P("x")))
    expected = x.copy()
    expected[:, 1] = [-1, -2, -3, -4, -5]
    column = np.array([-1.0, -2, -3, -4, -5])
    traced = spmd.jit(lambda v, u, i: dynamic_update_index_in_dim(v, u, i, 1))
    for got in (
        dynamic_update_index_in_dim(x, column, -2, axis=1),
        dynamic_update_index_in_dim(sharded, column[:, None], 1, axis=-1),
        traced(sharded, column, np.int32(-2)),
    ):
        assert isinstance(got, spmd.Array)
        np.testing.assert_array_equal(got, expected)
