"""pmap as a front end: a pmap is one shard_map equation over a mesh of its axis name (and
its nested pmaps'), its specs splitting each mapped operand and result along its in/out
axis; a nested pmap runs inline in that body."""

import numpy as np

import spmd
from spmd import P


def _program(pmapped, *args):
    return pmapped._compiled().trace(*args)[0].program


def test_a_pmap_is_one_shard_map_equation_with_specs_from_its_axes():
    f = spmd.pmap(lambda v, w: (v * w, v.sum()), "i", in_axes=(1, None), out_axes=(1, 0))
    x = np.arange(12.0).reshape(3, 4)
    program = _program(f, x, 2.0)
    (eqn,) = program.equations
    assert eqn.primitive.name == "shard_map"
    assert eqn.params["mesh"].shape == {"i": 4}
    assert eqn.params["in_dims"][-2:] == (((), ("i",)), ())
    assert eqn.params["out_dims"] == (((), ("i",)), (("i",),))
    scaled, sums = f(x, 2.0)
    np.testing.assert_array_equal(np.asarray(scaled), x * 2.0)
    np.testing.assert_array_equal(np.asarray(sums), x.sum(axis=0))
    assert scaled.sharding.spec == P(None, "i")


def test_nested_pmaps_are_one_shard_map_equation_over_their_grid():
    f = spmd.pmap(spmd.pmap(lambda v: v + 1, "cols", in_axes=1, out_axes=1), "rows")
    x = np.arange(2.0 * 3 * 4).reshape(2, 3, 4)
    (eqn,) = _program(f, x).equations
    assert eqn.primitive.name == "shard_map"
    assert eqn.params["mesh"].shape == {"rows": 2, "cols": 4}
    assert eqn.params["in_dims"] == ((("rows",), (), ()),)
    assert eqn.params["out_dims"] == ((("rows",), (), ()),)
    (body,) = eqn.params["bodies"]
    names = [e.primitive.name for e in body.equations]
    assert names == ["reshape", "axis_slice", "add", "all_gather", "reshape"]
    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), x + 1)
    assert y.sharding.spec == P("rows", None, "cols")  # left split as the inner pmap leaves it
