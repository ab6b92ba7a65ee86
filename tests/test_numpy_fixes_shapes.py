"""Issue 22's wrong values and refusals in spmd.numpy creation, shape and indexing functions
and spmd.lax slicing, each against NumPy 2 (JAX's documented rules for lax): eagerly, under
jit, and on arrays split unevenly over 8 devices (5 elements on 8)."""

import warnings

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from tests.cases import assert_matches

MODES = ("eager", "jit", "sharded")


def put(x, spec=None):
    """``x`` split over an 8-device mesh along its first axis (replicated if 0-d)."""
    x = np.asarray(x)
    mesh = spmd.make_mesh((8,), ("x",))
    return spmd.device_put(x, NamedSharding(mesh, spec or (P("x") if x.ndim else P())))


def run(mode, fn, *arrays):
    """``fn(*arrays)`` eagerly on NumPy inputs, under jit, or on inputs split over 8 devices."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if mode == "jit":
            return spmd.jit(fn)(*arrays)
        if mode == "sharded":
            return fn(*map(put, arrays))
        return fn(*arrays)


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
