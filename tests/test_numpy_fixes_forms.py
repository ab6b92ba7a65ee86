"""Issue 22 item 2: NumPy's one-argument ``where(condition)`` (with JAX's ``size=`` and
``fill_value=`` under jit) and ``astype(x, dtype, /, *, copy, device)`` as the Array API and
jax.numpy have it."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P


@pytest.mark.parametrize(
    "condition",
    [np.array([0, 1, 2]), np.array([[0, 1], [1, 0]]), np.zeros((2, 0)), [True, False, True]],
)
def test_where_of_one_argument_is_nonzero(condition):
    got = snp.where(condition)
    want = np.where(condition)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, spmd.Array)
        np.testing.assert_array_equal(np.asarray(g), w)


def test_where_of_one_traced_argument_takes_size_and_fill_value():
    got = spmd.jit(lambda c: snp.where(c, size=4, fill_value=-1))(np.array([0, 3, 0, 5]))
    np.testing.assert_array_equal(np.asarray(got[0]), [1, 3, -1, -1])
    with pytest.raises(spmd.SpmdTypeError, match="size="):
        spmd.jit(snp.where)(np.array([0, 3]))


def test_where_with_x_or_y_alone_is_refused_as_numpy_refuses_it():
    with pytest.raises(ValueError):
        np.where(np.array([True]), 1)
    with pytest.raises(spmd.SpmdValueError, match="give both x and y"):
        snp.where(np.array([True]), 1)
    with pytest.raises(spmd.SpmdValueError, match="size=3"):
        snp.where(np.array([True]), 1, 2, size=3)


def test_astype_takes_copy_and_device():
    x = np.arange(4)
    for copy in (True, False):
        got = snp.astype(x, np.float32, copy=copy)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), x.astype(np.float32))
    sharding = NamedSharding(spmd.make_mesh((2,), ("x",)), P("x"))
    placed = snp.astype(x, np.int8, device=sharding)
    assert placed.sharding == sharding and placed.dtype == np.int8
    np.testing.assert_array_equal(np.asarray(placed), x.astype(np.int8))
    with pytest.raises(TypeError):
        snp.astype(x, dtype=np.float32)  # dtype is positional-only, as in the Array API
