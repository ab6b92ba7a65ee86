"""Reductions beyond the case table (tests/cases/): dtypes, identities, messages, methods."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from tests.cases import make_input


def test_result_dtypes_follow_numpy_2():
    x = {d: spmd.device_put(np.ones(4, d)) for d in (np.bool_, np.int32, np.float32, np.uint8)}
    assert snp.sum(x[np.bool_]).dtype == np.int64 and snp.sum(x[np.int32]).dtype == np.int64
    assert snp.sum(x[np.uint8]).dtype == np.uint64 and snp.prod(x[np.bool_]).dtype == np.int64
    assert snp.mean(x[np.int32]).dtype == np.float64 and snp.std(x[np.bool_]).dtype == np.float64
    assert (
        snp.mean(x[np.float32]).dtype == np.float32 and snp.var(x[np.float32]).dtype == np.float32
    )
    assert snp.max(x[np.bool_]).dtype == np.bool_ and snp.all(x[np.float32]).dtype == np.bool_
    assert snp.argmax(x[np.float32]).dtype == np.intp
    assert snp.cumsum(x[np.int32]).dtype == np.int64
    half = np.arange(6, dtype=np.float16)
    assert snp.mean(half).dtype == np.float16 and float(snp.mean(half)) == 2.5


def test_empty_reductions_give_numpys_identities():
    empty = spmd.device_put(np.zeros((2, 0, 3), np.float32))
    assert snp.sum(empty).tolist() == 0.0 and snp.prod(empty).tolist() == 1.0
    assert snp.all(empty).tolist() is True and snp.any(empty).tolist() is False
    assert snp.sum(empty, axis=1).tolist() == [[0.0] * 3] * 2
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(np.asarray(snp.mean(empty)))
    assert snp.max(empty, axis=0).shape == (0, 3)  # nothing empty is reduced: no error
    assert snp.max(empty, axis=1, initial=-1.0).tolist() == [[-1.0] * 3] * 2


def test_max_of_empty_axis_raises_naming_function_axis_shape_and_fix():
    x = np.zeros((2, 0, 3), np.float32)
    with pytest.raises(spmd.ShapeError, match=r"max: cannot reduce axis 1 of f32\[2,0,3\]") as e:
        snp.max(x, axis=1)
    assert "initial=" in str(e.value)
    with pytest.raises(spmd.ShapeError, match=r"min: cannot reduce axes \(0, 1\) \(axis 1 has"):
        snp.min(x, axis=(0, 1))
    with pytest.raises(spmd.ShapeError, match=r"argmin: cannot reduce axis 1 of f32\[2,0,3\]"):
        snp.argmin(x, axis=1)
    with pytest.raises(spmd.ShapeError, match=r"argmax: cannot reduce all axes.*f64\[0\]"):
        spmd.jit(snp.argmax)(np.zeros(0))  # at trace time


def test_axis_errors_name_the_axis_and_the_rank():
    x = spmd.device_put(np.ones((2, 3)))
    with pytest.raises(spmd.ShapeError, match=r"sum: axis=2 .* use an axis in \[-2, 2\)"):
        snp.sum(x, axis=2)
    with pytest.raises(spmd.ShapeError, match=r"mean: axis=-3 is out of bounds for f64\[2,3\]"):
        spmd.jit(lambda v: v.mean(axis=(0, -3)))(x)
    with pytest.raises(spmd.ShapeError, match=r"var: axis=\(1, -1\) names axis 1 twice"):
        snp.var(x, axis=(1, -1))
    with pytest.raises(spmd.ShapeError, match=r"cumsum: axis=1 is out of bounds .* 1 dimension"):
        snp.cumsum(np.float32(1), axis=1)
    with pytest.raises(spmd.SpmdTypeError, match=r"argmax: axis=\(0,\) is a sequence"):
        snp.argmax(x, axis=(0,))
    with pytest.raises(spmd.SpmdTypeError, match=r"sum: axis must be an integer, got 0\.5"):
        snp.sum(x, axis=0.5)
    with pytest.raises(spmd.SpmdTypeError, match="initial="):
        snp.max(x, initial=np.zeros(2))
    with pytest.raises(spmd.SpmdTypeError, match="dtype="):
        snp.sum(x, dtype="U4")


def test_array_methods_forward_to_reductions_eagerly_and_traced():
    data = make_input((3, 4), np.float32, seed=11)

    def methods(v):
        return [
            v.sum(axis=0),
            v.mean(),
            v.prod(axis=1, keepdims=True),
            v.max(axis=-1),
            v.min(),
            v.argmax(axis=1),
            v.argmin(),
            (v > 0).all(axis=0),
            (v > 0).any(),
            v.std(ddof=1),
            v.cumsum(),
            v.sum(dtype=np.float64),
        ]

    x = spmd.device_put(data)
    for results in (methods(x), spmd.jit(methods)(x)):
        for result, expected in zip(results, methods(data), strict=True):
            assert (result.dtype, result.shape) == (expected.dtype, np.shape(expected))
            np.testing.assert_array_equal(np.asarray(result), expected)


def test_var_method_on_tracers():
    data = make_input((3, 4), np.float32, seed=12)
    assert spmd.device_put(data).var(axis=0).tolist() == data.var(axis=0).tolist()
    assert spmd.jit(lambda v: v.var(axis=0))(data).tolist() == data.var(axis=0).tolist()


def test_tutorial_sum_over_axis_0_and_sharded_input():
    x = spmd.device_put(np.arange(32).reshape(4, 8))
    assert x.sum(axis=0).tolist() == [48, 52, 56, 60, 64, 68, 72, 76]
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    sharded = spmd.device_put(np.arange(32).reshape(4, 8), NamedSharding(mesh, P("x", "y")))
    assert sharded.sum(axis=1).tolist() == [28, 92, 156, 220]
    assert snp.max(sharded).tolist() == 31 and snp.argmin(sharded, axis=0).tolist() == [0] * 8


def test_programs_use_one_primitive_per_reduction():
    printed = str(spmd.make_jaxpr(lambda v: (v.sum(axis=(0, 1)), v.std(axis=-1)))(np.ones((2, 3))))
    assert "reduce_sum[axes=(0, 1) dtype=None keepdims=False]" in printed
    assert "reduce_var[axes=(1,) ddof=0 dtype=None keepdims=False]" in printed and "sqrt" in printed


def test_python_scalars_and_lists_reduce_like_numpy():
    assert snp.sum(3).dtype == np.sum(3).dtype and snp.sum(3).tolist() == 3
    assert snp.mean([1, 2, 4]).tolist() == np.mean([1, 2, 4])
    assert snp.cumsum(2.5).tolist() == [2.5] and snp.argmax(7).tolist() == 0
