"""jit and make_jaxpr: the tutorial's numbers, the cache, static arguments, pytrees, errors."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P


def test_tutorial_two_sin_plus_one():
    x = snp.arange(32, dtype=np.float32)
    for y in (2 * snp.sin(x) + 1, spmd.jit(lambda v: 2 * snp.sin(v) + 1)(x)):
        assert y.dtype == np.float32
        np.testing.assert_allclose(np.asarray(y)[:4], [1.0, 2.682942, 2.818595, 1.28224], rtol=1e-6)


def test_jit_traces_once_per_signature():
    traces = []

    @spmd.jit
    def f(x, y):
        traces.append(1)
        return x * y + 1

    f(np.ones(3), 2.0)
    f(np.zeros(3), 5.0)
    assert len(traces) == 1
    f(np.ones(4), 2.0)
    f(np.ones(3, np.float32), 2.0)
    assert len(traces) == 3


def test_static_arguments_and_pytrees():
    @spmd.jit
    def g(params, x):
        return {"out": params["w"] * x + params["b"], "scale": x}

    out = g({"w": np.float32(2), "b": np.ones(3, np.float32)}, np.arange(3, dtype=np.float32))
    assert out["out"].tolist() == [1.0, 3.0, 5.0] and out["scale"].dtype == np.float32

    h = spmd.jit(lambda x, n: x * n if n > 1 else x, static_argnums=1)
    assert h(np.ones(2), 3).tolist() == [3.0, 3.0] and h(np.ones(2), 0).tolist() == [1.0, 1.0]
    with pytest.raises(spmd.SpmdTypeError, match="not hashable"):
        spmd.jit(lambda x, n: x, static_argnums=1)(np.ones(2), [1])


def test_make_jaxpr_prints_the_program():
    text = str(spmd.make_jaxpr(lambda x: 2 * snp.sin(x) + 1)(np.ones(8, np.float32)))
    assert text.splitlines() == [
        "{ lambda ; a:f32[8]. let",
        "    b:f32[8] = sin a",
        "    c:f32[8] = multiply 2:i64[] b",
        "    d:f32[8] = add c 1:i64[]",
        "  in (d,) }",
    ]


def test_python_control_flow_on_traced_values_says_what_to_do():
    with pytest.raises(spmd.SpmdError, match=r"where\(cond, a, b\).*static_argnums"):
        spmd.jit(lambda x: x if x > 0 else -x)(np.ones(()))


def test_results_keep_a_sensible_sharding():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = spmd.device_put(np.arange(8.0), NamedSharding(mesh, P("x")))
    assert spmd.jit(lambda v: v * 2)(x).sharding == x.sharding
    target = NamedSharding(mesh, P("y"))
    assert spmd.jit(lambda v: v * 2, out_shardings=target)(x).sharding == target


def test_numpy_functions_spmd_lacks_fail_clearly_when_traced_and_fall_back_eagerly():
    assert list(np.ediff1d(snp.arange(4))) == [1, 1, 1]  # concrete Arrays fall back to NumPy itself
    with pytest.raises(spmd.SpmdTypeError, match=r"numpy.ediff1d was called on a traced value"):
        spmd.jit(lambda x: np.ediff1d(x))(np.ones(4))
    assert isinstance(np.sin(snp.arange(3.0)), spmd.Array)  # implemented ones stay spmd
