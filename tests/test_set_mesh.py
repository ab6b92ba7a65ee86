"""Today's JAX mesh API: set_mesh / use_mesh, bare PartitionSpecs under them, reshard,
shard_map without mesh=, and make_mesh taking the first devices."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
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


@pytest.mark.parametrize("traced", [False, True])
def test_out_sharding_lays_out_results_of_contractions_reshapes_and_creation(traced):
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    x = np.arange(32.0).reshape(8, 4)
    calls = {
        "matmul": (lambda m, a, s: m.matmul(a, a.T, out_sharding=s), P("x", "y")),
        "dot": (lambda m, a, s: m.dot(a, a.T, out_sharding=s), P(None, "y")),
        "einsum": (lambda m, a, s: m.einsum("ij,kj->ik", a, a, out_sharding=s), P("y", "x")),
        "tensordot": (lambda m, a, s: m.tensordot(a, a, ([1], [1]), out_sharding=s), P("x")),
        "reshape": (lambda m, a, s: m.reshape(a, (4, 8), out_sharding=s), P(None, "x")),
        "zeros_like": (lambda m, a, s: m.zeros_like(a, out_sharding=s), P("x", "y")),
        "arange": (lambda m, a, s: m.arange(16, out_sharding=s), P(("x", "y"))),
        "full": (lambda m, a, s: m.full((8, 2), 3.0, out_sharding=s), P("x")),
    }
    with spmd.set_mesh(mesh):
        for name, (call, spec) in calls.items():
            expected = np.asarray(call(snp, x, None))  # the values: the case table's job
            if traced:
                result = spmd.jit(lambda a, call=call, spec=spec: call(snp, a, spec))(x)
            else:
                result = call(snp, spmd.device_put(x), spec)
            assert result.sharding == spmd.NamedSharding(mesh, spec), name
            np.testing.assert_allclose(result, expected, err_msg=name)


def test_axis_types_are_part_of_the_mesh():
    from spmd.sharding import AxisType

    auto = spmd.make_mesh((2, 4), ("x", "y"))
    explicit = spmd.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    assert auto.axis_types == (AxisType.Auto, AxisType.Auto)
    assert explicit != auto and "axis_types=(Explicit, Explicit)" in repr(explicit)
    x = spmd.device_put(np.arange(8.0).reshape(2, 4), spmd.NamedSharding(explicit, P("x", "y")))
    np.testing.assert_array_equal(spmd.jit(lambda v: v * 2)(x), np.arange(8.0).reshape(2, 4) * 2)
    with pytest.raises(spmd.ShardingError, match=r"one spmd\.sharding\.AxisType per axis"):
        spmd.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,))
