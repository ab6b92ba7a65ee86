"""Bad input raises the right SpmdError subclass with a message naming the argument and axis."""

import numpy as np
import pytest

import spmd
from spmd import Mesh, NamedSharding, P


@pytest.fixture
def mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def test_error_hierarchy():
    for error in (spmd.ShardingError, spmd.AxisNameError, spmd.ShapeError, spmd.DistributedError):
        assert issubclass(error, spmd.SpmdError)
    assert issubclass(spmd.ShardingError, ValueError)
    assert issubclass(spmd.SpmdTypeError, TypeError)


def test_unknown_axis_names_the_axis_and_the_mesh_axes(mesh):
    with pytest.raises(spmd.ShardingError, match=r"'z'.*not in the mesh.*\('x', 'y'\)"):
        NamedSharding(mesh, P("x", "z"))


@pytest.mark.parametrize("spec", [("x", "x"), (("x", "y"), "y"), (None, ("x", "x"))])
def test_axis_used_twice_names_the_axis_and_both_dimensions(spec):
    with pytest.raises(spmd.ShardingError, match=r"uses mesh axis '(x|y)' twice \(dimensions"):
        P(*spec)


def test_spec_entry_of_the_wrong_type_names_its_position():
    with pytest.raises(spmd.ShardingError, match="entry 1 is 3"):
        P("x", 3)


def test_more_spec_entries_than_dimensions_names_the_argument_and_sizes(mesh):
    sharding = NamedSharding(mesh, P("x", "y"))
    with pytest.raises(spmd.ShardingError, match=r"x: f64\[4\].*2 entries.*\(4,\).*1 dimension"):
        spmd.device_put(np.ones(4), sharding)
    with pytest.raises(spmd.ShardingError, match=r"x\['w'\]\[1\]: f32\[\]"):
        spmd.device_put({"w": [np.ones((2, 2)), np.float32(1)]}, sharding)
    with pytest.raises(spmd.ShardingError, match="3 entries"):
        NamedSharding(mesh, P("x", None, "y")).shard_shape((4, 4))


def test_unknown_memory_kind_lists_the_kinds(mesh):
    with pytest.raises(spmd.ShardingError, match=r"memory_kind='gpu'.*'device', 'pinned_host'"):
        NamedSharding(mesh, P(), memory_kind="gpu")
    with pytest.raises(spmd.ShardingError, match="memory_kind='hbm'"):
        NamedSharding(mesh, P()).with_memory_kind("hbm")
    with pytest.raises(spmd.ShardingError, match="memory_kind='disk'"):
        spmd.SingleDeviceSharding(spmd.devices()[0], memory_kind="disk")


def test_mesh_shape_that_does_not_match_the_device_count():
    with pytest.raises(spmd.ShardingError, match=r"\(3, 3\) need 9 devices, but 8 exist"):
        spmd.make_mesh((3, 3), ("x", "y"))
    with pytest.raises(spmd.ShardingError, match=r"\(3, 2\) need 6 devices, but 8 were given"):
        spmd.make_mesh((3, 2), ("x", "y"), devices=spmd.devices())
    with pytest.raises(spmd.ShardingError, match=r"2 axis_shapes \(2, 4\) but 1 axis_names"):
        spmd.make_mesh((2, 4), ("x",))
    with pytest.raises(spmd.ShardingError, match=r"shape \(2, 4\).*1 axis_names"):
        Mesh(np.array(spmd.devices()).reshape(2, 4), ("x",))


def test_mesh_rejects_repeated_names_and_devices():
    with pytest.raises(spmd.ShardingError, match="repeat 'x'"):
        Mesh(np.array(spmd.devices()).reshape(2, 4), ("x", "x"))
    with pytest.raises(spmd.ShardingError, match=r"repeat device ids \[0\]"):
        Mesh(np.array(spmd.devices()[:1] * 2), ("x",))
    with pytest.raises(spmd.ShardingError, match="entry at"):
        Mesh(np.array([0, 1]), ("x",))


def test_bare_partition_spec_outside_a_mesh_says_how_to_fix():
    with pytest.raises(spmd.ShardingError, match=r"needs a mesh.*with mesh"):
        spmd.device_put(np.ones(4), P("x"))


def test_non_numeric_and_ragged_data(mesh):
    with pytest.raises(spmd.SpmdTypeError, match=r"x\['s'\] has dtype <U1"):
        spmd.device_put({"s": np.array(["a"])})
    with pytest.raises(spmd.ShapeError, match="rectangular"):
        spmd.device_put([[1, 2], [3]])
    with pytest.raises(
        spmd.SpmdTypeError,
        match=r"device_put\(x\): the sharding must be a Sharding.*got str 'cpu:0'",
    ):
        spmd.device_put(np.ones(2), "cpu:0")


def test_callback_returning_the_wrong_shape_names_device_and_shapes(mesh):
    sharding = NamedSharding(mesh, P("x"))
    with pytest.raises(
        spmd.ShapeError, match=r"for CpuDevice\(id=0\) has shape \(4, 2\).*\(2, 2\)"
    ):
        spmd.make_array_from_callback((4, 2), sharding, lambda index: np.ones((4, 2)))


def test_single_device_arrays_of_the_wrong_count_or_shape(mesh):
    sharding = NamedSharding(mesh, P("x"))
    with pytest.raises(spmd.ShapeError, match=r"got 7 arrays.*8 addressable devices"):
        spmd.make_array_from_single_device_arrays((4,), sharding, [np.ones(2)] * 7)
    with pytest.raises(spmd.ShapeError, match=r"CpuDevice\(id=0\) has shape \(3,\).*\(2,\)"):
        spmd.make_array_from_single_device_arrays((4,), sharding, [np.ones(3)] * 8)


def test_unknown_platform_and_non_device_arguments():
    with pytest.raises(spmd.SpmdTypeError, match="platform='tpu'"):
        spmd.devices("tpu")
    with pytest.raises(spmd.SpmdTypeError, match="SingleDeviceSharding device must be a Device"):
        spmd.SingleDeviceSharding(0)


def test_shapes_must_be_non_negative_integers(mesh):
    sharding = NamedSharding(mesh, P("x"))
    with pytest.raises(spmd.SpmdTypeError, match=r"callback shape must be a tuple.*\(4\.5, 2\)"):
        spmd.make_array_from_callback((4.5, 2), sharding, lambda index: np.ones((4, 2))[index])
    with pytest.raises(spmd.SpmdTypeError, match="global_shape must be a tuple"):
        sharding.devices_indices_map((4.9,))
    with pytest.raises(spmd.ShapeError, match=r"\(4, -1\) has a negative dimension"):
        sharding.shard_shape((4, -1))
    x = spmd.make_array_from_callback(np.array([4, 2]), sharding, lambda i: np.ones((4, 2))[i])
    assert x.shape == (4, 2) and all(type(d) is int for d in x.shape)


def test_meshes_need_existing_devices():
    with pytest.raises(spmd.ShardingError, match="at least one device"):
        Mesh(np.array([], dtype=object), ("x",))
    with pytest.raises(spmd.ShardingError, match=r"CpuDevice\(id=42\), which does not exist"):
        Mesh(np.array([spmd.CpuDevice(42)]), ("x",))
    with pytest.raises(spmd.ShardingError, match="ids 0 to 7"):
        spmd.device_put(np.ones(2), spmd.CpuDevice(42))


def test_wrongly_typed_arguments_get_spmd_errors(mesh):
    with pytest.raises(spmd.SpmdTypeError, match="axis_shapes must be a tuple of ints"):
        spmd.make_mesh(8, ("x",))
    with pytest.raises(spmd.SpmdTypeError, match="axis_names must be a tuple of strings"):
        Mesh(np.array(spmd.devices()), 3)
    with pytest.raises(spmd.SpmdTypeError, match="arrays must be a list"):
        spmd.make_array_from_single_device_arrays((4,), NamedSharding(mesh, P("x")), 5)
    with pytest.raises(spmd.ShardingError, match=r"make_array_from_callback: a bare.*needs a mesh"):
        spmd.make_array_from_callback((4,), P("x"), lambda index: np.ones(4)[index])
    with pytest.raises(spmd.ShardingError, match="pytree prefix of x"):
        spmd.device_put({"a": np.ones(2)}, {"b": spmd.devices()[0]})


def test_comparing_arrays_is_elementwise_not_an_identity_check():
    x = spmd.device_put(np.arange(3))
    assert (x == spmd.device_put(np.array([0, 5, 2]))).tolist() == [True, False, True]
