"""Today's JAX mesh API: set_mesh / use_mesh, bare PartitionSpecs under them, reshard,
shard_map without mesh=, and make_mesh taking the first devices."""

import numpy as np
import pytest

import spmd
from spmd import P
from spmd.lax import psum


def test_make_mesh_takes_the_first_devices():
    mesh = spmd.make_mesh((2,), ("i",))
    assert list(mesh.devices.flat) == spmd.devices()[:2]
    out = spmd.shard_map(lambda b: psum(b, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())(
        np.arange(4.0)
    )
    np.testing.assert_array_equal(out, [2.0, 4.0])


def test_set_mesh_as_a_block_and_as_a_call():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    assert spmd.sharding.get_mesh() is None
    with spmd.set_mesh(mesh) as inside:
        assert inside is mesh and spmd.sharding.get_mesh() is mesh
        with spmd.use_mesh(spmd.make_mesh((8,), ("z",))):
            assert spmd.sharding.get_mesh().axis_names == ("z",)
        assert spmd.sharding.get_mesh() is mesh
    assert spmd.sharding.get_mesh() is None
    spmd.set_mesh(mesh)
    try:
        assert spmd.sharding.get_mesh() is mesh
    finally:
        spmd.set_mesh(None)
    with pytest.raises(spmd.SpmdTypeError, match="set_mesh takes a Mesh"):
        spmd.set_mesh("mesh")


def test_bare_specs_reshard_and_shard_map_use_the_set_mesh():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    x = np.arange(32.0).reshape(8, 4)
    with spmd.set_mesh(mesh):
        a = spmd.device_put(x, P("x", "y"))
        assert a.sharding == spmd.NamedSharding(mesh, P("x", "y"))
        b = spmd.reshard(a, P(None, "x"))
        assert b.sharding.spec == P(None, "x")
        np.testing.assert_array_equal(b, x)
        inside = spmd.jit(lambda v: spmd.reshard(v * 2, P("y")))(a)
        assert inside.sharding.spec == P("y")
        np.testing.assert_array_equal(inside, x * 2)
        out = spmd.jit(lambda v: v + 1, out_shardings=P(None, "y"))(a)
        assert out.sharding == spmd.NamedSharding(mesh, P(None, "y"))
        total = spmd.shard_map(
            lambda blk: psum(blk.sum(), ("x", "y")), in_specs=P("x", "y"), out_specs=P()
        )(a)
        assert float(total) == x.sum()
    with pytest.raises(spmd.ShardingError, match="needs a mesh"):
        spmd.reshard(a, P("x"))
