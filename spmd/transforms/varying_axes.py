"""Which mesh axes each value of a per-device program varies over (shard_map's check_rep).

A value varies over an axis when devices along that axis may hold different data. Inputs
vary over the axes their spec splits them over; local operations vary over the union of
their operands' axes; primitives with a ``varying`` rule say otherwise (collectives drop or
add their axes; a nested pmap varies over its own axis inside, and no longer after its
results are stacked).
"""

from __future__ import annotations

from collections.abc import Sequence

from spmd.core.program import Literal, Program, Var

Varying = frozenset[str]


def varying_axes(program: Program, inputs: Sequence[Varying]) -> list[Varying]:
    """The axes each output of ``program`` varies over, given its invars'."""
    env: dict[Var, Varying] = dict(zip(program.invars, inputs, strict=True))
    env.update((v, frozenset()) for v in program.constvars)

    def of(atom) -> Varying:
        return frozenset() if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        operands = [of(a) for a in eqn.inputs]
        rule = eqn.primitive.rules.varying
        if rule is not None:
            outs = rule(eqn, operands)
        else:
            outs = [frozenset().union(*operands)] * len(eqn.outputs)
        env.update(zip(eqn.outputs, outs, strict=True))
    return [of(a) for a in program.outvars]
