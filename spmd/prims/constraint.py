"""Sharding annotations as primitives: a constraint on a value, and an inspection of it."""

from __future__ import annotations

from spmd.core.primitive import Primitive, Rules
from spmd.sharding.rules import Decision, Factors, ValueSharding


def _pinned(ins, outs, *, sharding) -> Decision:
    """Operand and result take ``sharding``, the NamedSharding the value is pinned to."""
    target = ValueSharding(sharding.spec.dims(outs[0].ndim))
    return Decision((target,), (target,), "with_sharding_constraint pins it")


sharding_constraint_p = Primitive(
    "sharding_constraint",
    Rules(shape=lambda x, *, sharding: x, impl=lambda xp, x, *, sharding: x, sharding=_pinned),
)


def _inspect_sharding(ins, outs, *, callback) -> Factors:
    """The operand stays as it is; there is no result."""
    names = [f"d{i}" for i in range(ins[0].ndim)]
    dims = tuple((n,) for n in names)
    return Factors((dims,), (), dict(zip(names, ins[0].shape, strict=True)), linear="one")


# inspect_array_sharding: no result; the partitioner calls ``callback`` with the operand's
# sharding once, when the program is compiled.
inspect_sharding_p = Primitive(
    "inspect_sharding",
    Rules(
        shape=lambda x, *, callback: [],
        impl=lambda xp, x, *, callback: [],
        sharding=_inspect_sharding,
    ),
    multiple_results=True,
)
