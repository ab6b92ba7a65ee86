"""Primitives that steer transformations rather than compute: stop_gradient."""

from __future__ import annotations

from spmd.core.primitive import Primitive, Rules
from spmd.sharding.rules import broadcast_factors


def _stop_gradient_batch(args, dims):
    return stop_gradient_p.bind(args[0]), dims[0]


# The value itself, with a zero derivative: a constant as far as jvp, grad and vjp go.
stop_gradient_p = Primitive(
    "stop_gradient",
    Rules(
        shape=lambda x: x,
        impl=lambda xp, x: x,
        sharding=lambda ins, outs: broadcast_factors([ins[0].shape], outs[0].shape, "one"),
        jvp=lambda primals, out, tangents: None,
        batch=_stop_gradient_batch,
    ),
)
