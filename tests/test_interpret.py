"""The one interpreter: one way to apply an implementation, one last-use and reuse analysis."""

import numpy as np
import pytest

from spmd.core.aval import ShapedArray
from spmd.core.interpret import Access, apply, implementation, last_uses, reuse_plan, runner
from spmd.core.program import Literal, Var
from spmd.errors import SpmdTypeError
from spmd.prims.elementwise import BINARY, UNARY

add_p, sin_p = BINARY["add"], UNARY["sin"]


def _var(shape=(4,), dtype=np.float32):
    return Var(ShapedArray(shape, np.dtype(dtype)))


def test_one_analysis_for_any_steps_keyed_by_what_must_match():
    a, b, c, d, e = (_var() for _ in range(5))
    steps = [
        Access((), (a,)),  # from the host: not fresh
        Access((a, Literal(2.0, None)), (b,), fresh=True, into=True, keys=("s",)),
        Access((b,), (c,), fresh=True, into=True, keys=("s",)),
        Access((c,), (d,), fresh=True, into=True, keys=("t",)),  # another sharding
        Access((d,), (e,)),  # a view of d
    ]
    last = last_uses(steps, [e])
    assert last == {a: 1, b: 2, c: 3, d: 4, e: 5}
    assert reuse_plan(steps, last) == {2: 0}  # a is not fresh, c's key differs, d is viewed


def test_implementation_calls_numpy_ufuncs_directly_only_without_params_or_out():
    assert implementation(sin_p.rules, np, params=False) is np.sin
    assert implementation(sin_p.rules, np, params=False, out=True) is not np.sin
    x = np.linspace(0, 1, 4)
    (got,) = runner(sin_p, np, "numpy", params=False)([x], {})
    np.testing.assert_array_equal(got, np.sin(x))
    (got,) = apply(add_p, np, [x, 1.0], {})
    np.testing.assert_array_equal(got, x + 1.0)


def test_a_missing_kernel_names_the_backend():
    class Rules:
        ufunc = None

        @staticmethod
        def impl(xp, x):
            raise NotImplementedError("no kernel for uint16")

    class Primitive:
        name = "frob"
        rules = Rules
        multiple_results = False

    with pytest.raises(SpmdTypeError, match="frob on the torch backend: no kernel"):
        apply(Primitive, np, [np.zeros(2)], {}, "torch")
    with pytest.raises(SpmdTypeError, match="frob on the torch backend"):
        runner(Primitive, np, "torch")([np.zeros(2)], {})


def test_a_compiled_program_writes_only_into_its_own_writable_results():
    import spmd
    import spmd.numpy as snp
    from spmd.core.interpret import compiled

    a = np.array([3.0, np.nan, 2.0])
    f = spmd.jit(lambda v: ~snp.isnan(snp.asarray(a)) & (v > 0))  # a constant, read-only
    np.testing.assert_array_equal(np.asarray(f(np.array([1.5, 2, -3]))), [True, False, False])

    program = spmd.make_jaxpr(lambda x: snp.tanh(snp.sin(x) * 2.0))(np.ones(4))
    run = compiled(program)
    x = np.linspace(0, 1, 4)
    x.flags.writeable = False
    (out,) = run(*program.consts, x)
    np.testing.assert_allclose(out, np.tanh(np.sin(x) * 2.0), rtol=1e-15)
    np.testing.assert_array_equal(x, np.linspace(0, 1, 4))
