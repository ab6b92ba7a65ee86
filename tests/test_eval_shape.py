"""eval_shape and ShapeDtypeStruct: shapes and dtypes as NumPy computes them, shardings as
jit gives them, and nothing computed."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P, ShapeDtypeStruct


def test_output_structs_match_what_the_function_computes():
    def f(x, y):
        return {"prod": x @ y, "sum": x.sum(axis=0), "pair": (x.T, y.astype(np.int32))}

    x, y = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)
    got = spmd.eval_shape(f, x, ShapeDtypeStruct((3, 5), np.float32))
    computed = f(x, y)
    for key in ("prod", "sum"):
        assert got[key].shape == np.asarray(computed[key]).shape
        assert got[key].dtype == np.asarray(computed[key]).dtype
    assert got["pair"][0].shape == (3, 4) and got["pair"][1].dtype == np.int32


def test_nothing_is_computed():
    calls = []

    def g(x):
        calls.append(type(x).__name__)
        return snp.sin(x)

    out = spmd.eval_shape(g, ShapeDtypeStruct((1000, 1000), np.float64))
    assert out.shape == (1000, 1000) and calls and "Array" not in calls


def test_sharded_struct_propagates_like_jit():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    x_struct = ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P("x", "y")))

    def f(x):
        return x.T * 2, x.sum()

    t, s = spmd.eval_shape(f, x_struct)
    real = spmd.jit(f)(spmd.device_put(np.ones((8, 4), np.float32), x_struct.sharding))
    assert t.shape == (4, 8) and t.sharding == real[0].sharding
    assert s.shape == () and s.sharding == real[1].sharding


def test_struct_attributes_equality_and_repr():
    mesh = spmd.make_mesh((8,), ("x",))
    a = ShapeDtypeStruct((8, 2), np.float32, sharding=NamedSharding(mesh, P("x")))
    b = ShapeDtypeStruct([8, 2], "float32", sharding=NamedSharding(mesh, P("x")))
    assert a == b and hash(a) == hash(b)
    assert a != ShapeDtypeStruct((8, 2), np.float32)
    assert a.ndim == 2 and a.size == 16 and len(a) == 8 and a.dtype == np.float32
    assert a.weak_type is False
    assert repr(ShapeDtypeStruct((2,), np.int32)) == "ShapeDtypeStruct(shape=(2,), dtype=int32)"
    assert "weak_type=True" in repr(ShapeDtypeStruct((), np.float32, weak_type=True))
    with pytest.raises(TypeError):
        len(ShapeDtypeStruct((), np.float32))
    with pytest.raises(AttributeError):
        a.shape = (1,)
    assert a.update(shape=(4, 2)).shape == (4, 2)


def test_spec_sharding_reads_the_mesh_in_scope():
    mesh = spmd.make_mesh((8,), ("x",))
    s = ShapeDtypeStruct((8,), np.float32, sharding=P("x"))
    with pytest.raises(spmd.SpmdTypeError, match="set_mesh"):
        _ = s.sharding
    with spmd.set_mesh(mesh):
        assert s.sharding == NamedSharding(mesh, P("x"))


def test_bad_structs_and_arguments_raise_clearly():
    with pytest.raises(spmd.ShapeError, match="non-negative ints"):
        ShapeDtypeStruct((2, None), np.float32)
    with pytest.raises(spmd.SpmdTypeError, match="dtype"):
        ShapeDtypeStruct((2,), None)
    with pytest.raises(spmd.SpmdTypeError, match="sharding must be"):
        ShapeDtypeStruct((2,), np.float32, sharding="x")
    with pytest.raises(spmd.ShapeError):
        spmd.eval_shape(lambda a, b: a + b, ShapeDtypeStruct((2,), np.float32), np.ones(3))
