"""spmd.typeof reports types as JAX writes them: Explicit axes as ``8@x``, the axes a
shard_map value varies over as ``{V:x}``, weak types as ``~``. Expected strings are JAX
0.10's for the same code (with float32 where spmd keeps NumPy's float64)."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.lax import axis_index, psum
from spmd.sharding import AxisType


@pytest.fixture
def explicit_mesh():
    return spmd.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Explicit,) * 3)


def test_explicit_axes_show_in_an_arrays_type(explicit_mesh):
    x = spmd.device_put(
        np.ones((8, 4), np.float32), NamedSharding(explicit_mesh, P(("x", "z"), "y"))
    )
    assert str(spmd.typeof(x)) == "float32[8@(x,z),4@y]"
    assert repr(spmd.typeof(x)) == "ShapedArray(float32[8@(x,z),4@y])"
    assert spmd.typeof(x).sharding == NamedSharding(explicit_mesh, P(("x", "z"), "y"))


def test_auto_axes_follow_the_data_and_do_not_show():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = spmd.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    assert str(spmd.typeof(x)) == "float32[8,4]"
    assert spmd.typeof(x).sharding.spec == P(None, None)
    seen = []
    spmd.jit(lambda v: seen.append(str(spmd.typeof(v))) or v)(x)
    assert seen == ["float32[8,4]"]


def test_mixed_axis_types_show_only_the_explicit_ones():
    mesh = spmd.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto))
    x = spmd.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    assert str(spmd.typeof(x)) == "float32[8@x,4]"


def test_types_inside_jit_follow_the_arguments_shardings(explicit_mesh):
    x = spmd.device_put(
        np.ones((8, 4), np.float32), NamedSharding(explicit_mesh, P(("x", "z"), "y"))
    )
    seen = []

    @spmd.jit
    def f(a):
        seen.extend(str(spmd.typeof(v)) for v in (a, a * 2, a.sum(0), a.T, snp.ones(3, np.float32)))
        return a

    f(x)
    assert seen == [
        "float32[8@(x,z),4@y]",
        "float32[8@(x,z),4@y]",
        "float32[4@y]",
        "float32[4@y,8@(x,z)]",
        "float32[3]",
    ]


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_shard_map_values_show_the_axes_they_vary_over(explicit_mesh, mode):
    x = spmd.device_put(
        np.ones((8, 4), np.float32), NamedSharding(explicit_mesh, P(("x", "z"), "y"))
    )
    seen = []

    def body(b):
        for v in (b, psum(b, "y"), b.sum(), snp.ones(3, np.float32), axis_index("z")):
            seen.append(str(spmd.typeof(v)))
        return b

    f = spmd.shard_map(
        body, mesh=explicit_mesh, in_specs=P(("x", "z"), "y"), out_specs=P(("x", "z"), "y")
    )
    (f if mode == "eager" else spmd.jit(f))(x)
    assert seen == [
        "float32[2,2]{V:(x,y,z)}",
        "float32[2,2]{V:(x,z)}",
        "float32[]{V:(x,y,z)}",
        "float32[3]",
        "int32[]{V:z}",
    ]


def test_host_values_and_weak_python_scalars():
    assert str(spmd.typeof(np.int32(3))) == "int32[]"
    assert str(spmd.typeof(np.ones(2, bool))) == "bool[2]"
    assert str(spmd.typeof(3.0)) == "~float64[]"
    assert spmd.typeof(np.ones((2, 3))).shape == (2, 3)


def test_vma_is_a_set_of_axis_names():
    mesh = spmd.make_mesh((4, 2), ("i", "j"))
    seen = []

    def body(b):
        seen.append(spmd.typeof(psum(b, "j")).vma)
        return b

    spmd.shard_map(body, mesh=mesh, in_specs=P("i", "j"), out_specs=P("i", "j"))(np.ones((8, 4)))
    assert seen == [{"i"}]


def test_manual_axis_type_varying_in_shard_map_body():
    mesh = spmd.make_mesh((4, 2), ("i", "j"))
    seen = {}

    def body(a, b):
        seen["a"] = spmd.typeof(a).manual_axis_type.varying
        seen["b"] = spmd.typeof(b).mat.varying
        seen["summed"] = spmd.typeof(psum(a * b, "i")).manual_axis_type.varying
        seen["reduced"] = spmd.typeof(a).manual_axis_type.reduced
        return a * b

    spmd.shard_map(body, mesh=mesh, in_specs=(P("i"), P(None, "j")), out_specs=P("i", "j"))(
        np.ones((8, 2)), np.ones((2, 4))
    )
    assert seen["a"] == {"i"}
    assert seen["b"] == {"j"}
    assert seen["summed"] == {"j"}
    assert seen["reduced"] == frozenset()


def test_manual_axis_type_outside_shard_map_is_empty():
    assert spmd.typeof(np.ones(3)).manual_axis_type.varying == frozenset()
