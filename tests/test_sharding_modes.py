"""The sharding mode in scope: get_abstract_mesh, and auto_axes / explicit_axes changing which
mesh axes are Explicit for one function (and so what typeof shows)."""

import numpy as np
import pytest

import spmd
from spmd import P
from spmd.experimental.shard import auto_axes, explicit_axes, reshard
from spmd.sharding import AbstractMesh, AxisType, get_abstract_mesh


@pytest.fixture
def explicit_mesh():
    mesh = spmd.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit,) * 2)
    with spmd.set_mesh(mesh):
        yield mesh


def test_abstract_mesh_of_the_mesh_in_scope(explicit_mesh):
    assert get_abstract_mesh() == AbstractMesh((2, 4), ("X", "Y"), (AxisType.Explicit,) * 2)
    assert repr(get_abstract_mesh()) == (
        "AbstractMesh('X': 2, 'Y': 4, axis_types=(Explicit, Explicit))"
    )
    assert get_abstract_mesh().shape == {"X": 2, "Y": 4} and get_abstract_mesh().size == 8


def test_no_mesh_in_scope_is_an_empty_abstract_mesh():
    assert get_abstract_mesh().empty
    with pytest.raises(spmd.ShardingError, match="needs a mesh in scope"):
        auto_axes(lambda x: x)(np.ones(2), out_sharding=P())


def test_auto_axes_hides_its_axes_from_types_and_lays_results_out(explicit_mesh):
    x = reshard(np.arange(8.0).reshape(4, 2), P("X", "Y"))
    seen = []

    @auto_axes(axes="X")
    def double(v):
        seen.append((str(spmd.typeof(v)), get_abstract_mesh().axis_types))
        return v * 2

    out = double(x, out_sharding=P(None, "X"))
    assert seen == [("float64[4,2@Y]", (AxisType.Auto, AxisType.Explicit))]
    assert str(spmd.typeof(out)) == "float64[4,2@X]"
    np.testing.assert_array_equal(out, np.arange(8.0).reshape(4, 2) * 2)
    with pytest.raises(spmd.ShardingError, match="needs out_sharding"):
        double(x)
    with pytest.raises(spmd.ShardingError, match="axes names 'Z'"):
        auto_axes(lambda v: v, axes="Z", out_sharding=P())(x)


def test_explicit_axes_lays_arguments_out_and_shows_them():
    mesh = spmd.make_mesh((2, 4), ("X", "Y"))
    seen = []

    @explicit_axes(axes=("X",))
    def f(v, w):
        seen.append((str(spmd.typeof(v)), str(spmd.typeof(w))))
        return v + w

    with spmd.set_mesh(mesh):
        out = spmd.jit(lambda a, b: f(a, b, in_sharding=P("X")))(np.ones((4, 2)), np.ones((4, 2)))
    assert seen == [("float64[4@X,2]", "float64[4@X,2]")]
    np.testing.assert_array_equal(out, 2 * np.ones((4, 2)))


def test_config_takes_jax_option_names():
    spmd.config.update("jax_num_cpu_devices", spmd.device_count())
    with pytest.raises(spmd.ConfigError, match="too late"):
        spmd.config.update("jax_num_cpu_devices", spmd.device_count() + 1)
