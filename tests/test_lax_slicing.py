"""lax.dynamic_slice and kin against NumPy slicing with JAX's clamping, traced or known starts."""

import numpy as np
import pytest

import spmd
from spmd import lax


def clamp(start: int, length: int, size: int) -> int:
    return min(max(start, 0), length - size)


@pytest.mark.parametrize("traced", [False, True])
def test_dynamic_slice_and_update_equal_numpy_with_clamped_starts(traced):
    rng = np.random.default_rng(14)
    mesh = spmd.make_mesh((2, 4), ("a", "b"))
    for _ in range(20):
        shape = tuple(int(n) for n in rng.integers(1, 7, size=rng.integers(1, 4)))
        x = rng.standard_normal(shape)
        sizes = tuple(int(rng.integers(0, n + 1)) for n in shape)
        starts = tuple(int(rng.integers(-2, n + 3)) for n in shape)
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
