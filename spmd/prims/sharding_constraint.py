"""Sharding annotations as primitives: a constraint on a value, and an inspection of it."""

from __future__ import annotations

from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.sharding.named import NamedSharding
from spmd.sharding.rules import Decision, Factors, ValueSharding
from spmd.sharding.spec import PartitionSpec


def _pinned(ins, outs, *, sharding) -> Decision:
    """Operand and result take ``sharding``, the NamedSharding the value is pinned to."""
    target = ValueSharding(sharding.spec.dims(outs[0].ndim))
    return Decision((target,), (target,), "with_sharding_constraint pins it")


def _constraint_jvp(primals, out, tangents, *, sharding):
    """Tangents are pinned as their values are, so a backward pass lies as the forward one."""
    return sharding_constraint_p.bind(tangents[0], sharding=sharding)


def _constraint_transpose(ct, x, *, sharding):
    return [sharding_constraint_p.bind(ct, sharding=sharding)]


def _constraint_batch(args, dims, *, sharding):
    """The batch dimension is not split: the pin gains a None entry there."""
    (x,), (dim,) = args, dims
    entries = list(sharding.spec.dims(aval_of(x).ndim - 1))
    entries.insert(dim, ())
    spec = PartitionSpec(*[None if not e else e[0] if len(e) == 1 else e for e in entries])
    pinned = NamedSharding(sharding.mesh, spec, sharding.memory_kind)
    return sharding_constraint_p.bind(x, sharding=pinned), dim


sharding_constraint_p = Primitive(
    "sharding_constraint",
    Rules(
        shape=lambda x, *, sharding: x,
        impl=lambda xp, x, *, sharding: x,
        sharding=_pinned,
        jvp=_constraint_jvp,
        transpose=_constraint_transpose,
        batch=_constraint_batch,
    ),
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
