"""Which mesh axes a value varies over (JAX's ``vma``), computed once, when the value is made.

Inside a shard_map or pmap body a value varies over a mesh axis when devices along that axis
may hold different data. The axes ride on the value's abstract value (``ShapedArray.vma``):
a body's inputs get them from the transformation (the axes their spec splits them over, or
the pmap's own axis); every result of an equation gets them here, from its primitive's
``varying`` rule (collectives drop or add their axes; a nested pmap varies as its body does)
or else as the union of its operands'. Outside such bodies every value's set is empty.

This is the one place that applies the rule: tracing (spmd/core/trace.py), the check of a
traced program (spmd/core/typecheck.py) and the walk over a program that is not being traced
(``program_varying``) all come here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from spmd.core.aval import ShapedArray
from spmd.core.program import Literal, Program, Var

Varying = frozenset[str]
NOT_VARYING: Varying = frozenset()


@dataclasses.dataclass(frozen=True)
class _Call:
    """What a ``varying`` rule reads of its equation: the parameters."""

    params: dict


def result_varying(
    primitive: Any, params: dict, operands: Sequence[Varying], count: int
) -> list[Varying]:
    """The axes each of the ``count`` results of ``primitive`` varies over, given its
    operands'."""
    rule = primitive.rules.varying
    if rule is not None:
        return [frozenset(v) for v in rule(_Call(params), list(operands))]
    found = NOT_VARYING
    for v in operands:
        if v and not v <= found:
            found = found | v
    return [found] * count


def typed_results(primitive: Any, in_avals: Sequence[ShapedArray], params: dict) -> list:
    """The abstract values of ``primitive``'s results on operands of ``in_avals``: its shape
    rule's, with the axes each varies over."""
    out = primitive.rules.shape(*in_avals, **params)
    avals = list(out) if primitive.multiple_results else [out]
    vmas = result_varying(primitive, params, [a.vma for a in in_avals], len(avals))
    return [
        a if a.vma == v else dataclasses.replace(a, vma=v) for a, v in zip(avals, vmas, strict=True)
    ]


def program_varying(program: Program, inputs: Sequence[Varying]) -> list[Varying]:
    """The axes each output of ``program`` varies over when its invars vary over ``inputs``
    (its constants over none), for a program already traced, such as a nested pmap's body
    bound on operands other than those it was traced with."""
    env: dict[Var, Varying] = dict(zip(program.invars, inputs, strict=True))
    env.update((v, NOT_VARYING) for v in program.constvars)

    def of(atom) -> Varying:
        return NOT_VARYING if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        operands = [of(a) for a in eqn.inputs]
        outs = result_varying(eqn.primitive, eqn.params, operands, len(eqn.outputs))
        env.update(zip(eqn.outputs, outs, strict=True))
    return [of(a) for a in program.outvars]
