"""with_sharding_constraint as a primitive: the identity, with a sharding its result must have."""

from __future__ import annotations

from spmd.core.primitive import Primitive, Rules

# ``sharding`` is the NamedSharding the result is pinned to; propagation reads it directly.
sharding_constraint_p = Primitive(
    "sharding_constraint",
    Rules(shape=lambda x, *, sharding: x, impl=lambda xp, x, *, sharding: x),
)
