"""spmd.core.typecheck: the suite runs it on every traced Program (tests/conftest.py); here it
is shown to catch what it looks for, and the varying axes values carry are checked."""

import dataclasses

import numpy as np
import pytest

import spmd
from spmd import P, lax
from spmd.core.program import Equation, Program, Var
from spmd.core.trace import PROGRAM_CHECKS
from spmd.core.typecheck import ProgramTypeError, typecheck


def _program(f, *args) -> Program:
    return spmd.make_jaxpr(f)(*args)


def test_the_suite_typechecks_every_traced_program():
    assert typecheck in PROGRAM_CHECKS


def test_a_wrong_declared_shape_is_found():
    program = _program(lambda x: x + 1.0, np.ones(3))
    (eqn,) = program.equations
    wrong = Var(dataclasses.replace(eqn.outputs[0].aval, shape=(4,)))
    bad = Program(
        program.constvars,
        program.invars,
        [Equation(eqn.primitive, eqn.inputs, [wrong], eqn.params)],
        [wrong],
    )
    with pytest.raises(ProgramTypeError, match="declares outputs"):
        typecheck(bad)


def test_an_undefined_value_is_found():
    program = _program(lambda x: x * 2.0, np.ones(3))
    (eqn,) = program.equations
    stray = Var(program.invars[0].aval)
    bad = Program([], [], [Equation(eqn.primitive, [stray, *eqn.inputs[1:]], eqn.outputs, {})], [])
    with pytest.raises(ProgramTypeError, match="undefined"):
        typecheck(bad)


def _mesh():
    return spmd.make_mesh((2, 4), ("x", "y"))


def _body(f, in_specs, out_specs, x):
    program = _program(spmd.shard_map(f, mesh=_mesh(), in_specs=in_specs, out_specs=out_specs), x)
    (call,) = [e for e in program.equations if e.primitive.name == "shard_map"]
    return call.params["bodies"][0]


def test_values_carry_the_axes_they_vary_over():
    def f(v):
        return lax.psum(v * v.sum(), "x") + lax.axis_index("y")

    body = _body(f, P("x"), P("y"), np.ones(8))
    assert body.invars[0].aval.vma == {"x"}
    kinds = {e.primitive.name: e.outputs[0].aval.vma for e in body.equations}
    assert kinds["reduce_sum"] == {"x"}
    assert kinds["psum"] == set()
    assert kinds["axis_index"] == {"y"}
    assert body.outvars[0].aval.vma == {"y"}


def test_a_wrong_varying_set_is_found():
    body = _body(lambda v: v * 2.0, P("x"), P("x"), np.ones(8))
    (eqn,) = body.equations
    wrong = Var(eqn.outputs[0].aval.varying(frozenset()))
    bad = Program([], body.invars, [Equation(eqn.primitive, eqn.inputs, [wrong], eqn.params)], [])
    with pytest.raises(ProgramTypeError, match="vma"):
        typecheck(bad)


def test_tracer_vma_is_its_abstract_values():
    seen = []

    def f(v):
        seen.append((v._vma(), lax.psum(v, "x")._vma(), spmd.typeof(v).vma))
        return v

    _program(spmd.shard_map(f, mesh=_mesh(), in_specs=P("x", "y"), out_specs=P("x", "y")),
             np.ones((4, 8)))  # fmt: skip
    assert seen == [({"x", "y"}, {"y"}, {"x", "y"})]


def test_a_derivative_inside_shard_map_varies_as_its_primal():
    def f(v):
        (primal, tangent) = spmd.jvp(lambda a: a * a, (v,), (v,))
        assert primal._vma() == tangent._vma() == {"x"}
        return tangent

    spmd.shard_map(f, mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))(np.ones(8))
