"""Meshes, specs and shardings: the JAX tutorial's values, value semantics, memory kinds."""

import numpy as np
import pytest

import spmd
from spmd import Mesh, NamedSharding, P, PartitionSpec, SingleDeviceSharding


@pytest.fixture
def mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def test_jax_tutorial_shard_shape_and_device_5_index(mesh):
    sharding = NamedSharding(mesh, P("x", "y"))
    assert sharding.shard_shape((4, 8)) == (2, 2)
    device5 = spmd.devices()[5]
    assert sharding.devices_indices_map((4, 8))[device5] == (slice(2, 4), slice(2, 4))
    x = spmd.device_put(np.arange(32).reshape(4, 8), sharding)
    (shard,) = [s for s in x.addressable_shards if s.device == device5]
    assert shard.data.tolist() == [[18, 19], [26, 27]]


def test_unsplit_dimensions_index_with_full_slices(mesh):
    indices = NamedSharding(mesh, P(None, "y")).devices_indices_map((3, 8))
    assert indices[spmd.devices()[6]] == (slice(None), slice(4, 6))


def test_tuple_entry_splits_major_to_minor(mesh):
    # device 1 sits at x=0, y=1: block 0*4+1 of P(('x','y')), block 1*2+0 of P(('y','x'))
    d1 = spmd.devices()[1]
    assert NamedSharding(mesh, P(("x", "y"))).devices_indices_map((16,))[d1] == (slice(2, 4),)
    assert NamedSharding(mesh, P(("y", "x"))).devices_indices_map((16,))[d1] == (slice(4, 6),)


def test_uneven_split_gives_ceil_sized_blocks_and_an_empty_tail(mesh):
    indices = NamedSharding(mesh, P("y")).devices_indices_map((9,))
    by_y = [indices[spmd.devices()[i]] for i in range(4)]
    assert by_y == [(slice(0, 3),), (slice(3, 6),), (slice(6, 9),), (slice(9, 9),)]
    x = spmd.device_put(np.arange(9.0), NamedSharding(mesh, P("y")))
    assert [s.data.shape for s in x.addressable_shards[:4]] == [(3,), (3,), (3,), (0,)]
    assert NamedSharding(mesh, P("y")).shard_shape((9,)) == (3,)


def test_partition_spec_canonicalizes_entries():
    assert P(("x",), None) == P("x", None)
    assert P(()) == P(None)
    assert P("x", ("y", "z")).axis_names == ("x", "y", "z")
    assert repr(P("x")) == "PartitionSpec('x',)"
    assert P("x", None) == ("x", None)
    assert hash(P(("x",))) == hash(P("x"))


def test_named_sharding_equality_and_hash_are_by_value(mesh):
    same_mesh = Mesh(np.array(spmd.devices()).reshape(2, 4), ("x", "y"))
    a = NamedSharding(mesh, P("x"))
    b = NamedSharding(same_mesh, P("x", None), memory_kind="device")
    assert a == b and hash(a) == hash(b)
    assert a != NamedSharding(mesh, P("y"))
    assert a != a.with_memory_kind("pinned_host")
    other_order = Mesh(np.array(spmd.devices()[::-1]).reshape(2, 4), ("x", "y"))
    assert a != NamedSharding(other_order, P("x"))
    assert len({a, b, NamedSharding(mesh, P("y"))}) == 2


def test_memory_kinds(mesh):
    s = NamedSharding(mesh, P("x"))
    assert s.memory_kind == "device"
    pinned = s.with_memory_kind("pinned_host")
    assert pinned.memory_kind == "pinned_host" and pinned.spec == s.spec and pinned.mesh == mesh
    x = spmd.device_put(np.ones((4, 2)), s)
    y = spmd.device_put(x, pinned)
    assert y.sharding.memory_kind == "pinned_host"
    np.testing.assert_array_equal(np.asarray(y), np.ones((4, 2)))
    single = SingleDeviceSharding(spmd.devices()[2], memory_kind="pinned_host")
    assert single.memory_kind == "pinned_host" and single.with_memory_kind("device") != single


def test_sharding_queries(mesh):
    s = NamedSharding(mesh, P("x"))
    assert s.device_set == set(spmd.devices()) and s.num_devices == 8
    assert not s.is_fully_replicated
    assert NamedSharding(mesh, P()).is_fully_replicated
    assert NamedSharding(spmd.make_mesh((1, 8), ("x", "y")), P("x")).is_fully_replicated
    assert s.replication_factor == 4 and s.replication_axes() == ("y",)
    assert s.is_equivalent_to(NamedSharding(mesh, P("x", None)), 2)
    assert not s.is_equivalent_to(NamedSharding(mesh, P(None, "x")), 2)
    single = SingleDeviceSharding(spmd.devices()[3])
    assert single.devices_indices_map((2, 3)) == {spmd.devices()[3]: (slice(None), slice(None))}
    assert single.shard_shape((2, 3)) == (2, 3) and single.is_fully_replicated


def test_mesh_properties_and_context(mesh):
    assert list(mesh.shape.items()) == [("x", 2), ("y", 4)]
    assert mesh.axis_names == ("x", "y") and mesh.size == 8
    assert mesh.devices.shape == (2, 4) and mesh.devices[1, 2] == spmd.devices()[6]
    assert repr(mesh) == "Mesh('x': 2, 'y': 4)"
    assert mesh.device_ids.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert spmd.sharding.current_mesh() is None
    with mesh:
        assert spmd.sharding.current_mesh() is mesh
        x = spmd.device_put(np.arange(8), P("y"))
    assert spmd.sharding.current_mesh() is None
    assert x.sharding == NamedSharding(mesh, P("y"))


def test_make_mesh_over_chosen_devices():
    devices = spmd.devices()[4:]
    m = spmd.make_mesh((2, 2), ("a", "b"), devices=devices)
    assert [d.id for d in m.devices.flat] == [4, 5, 6, 7]
    assert PartitionSpec is P


def test_reshard_is_importable_where_jax_keeps_it():
    from spmd.sharding import reshard

    assert reshard is spmd.reshard is spmd.lax.reshard
