"""Vectorizing over a batch axis (vmap): each value carries where its batch dimension is.

A ``BatchTrace`` holds, for each value of the function, an array of the enclosing (parent)
trace with one extra dimension of the batch's size, and that dimension's position (None: the
value is the same for every batch member). Each primitive's ``batch`` rule applies it to the
whole batch at once, in the parent trace.

Rule signature (a field of a primitive's Rules):
``batch(args, dims, **params) -> (out, out_dim)``, where ``dims[i]`` is argument ``i``'s batch
dimension or None; for a primitive with several results, ``(outs, out_dims)``.

Collectives over the vmap's own ``axis_name`` act on the batch dimension (a psum over it
sums the batch members); over mesh axes they pass to the parent trace.
"""

from __future__ import annotations

from typing import Any

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive
from spmd.core.program import Var
from spmd.core.trace import Trace, Tracer, aval_of, tracing
from spmd.errors import SpmdTypeError


class BatchTrace(Trace):
    """Values are (batched value, batch dimension) pairs; primitives apply their ``batch``
    rules, or, for collectives over ``axis_name``, act on the batch dimension."""

    def __init__(self, parent: Trace, size: int, axis_name: str | None) -> None:
        self.parent = parent
        self.size = size
        self.axis_name = axis_name
        self.active = True

    def pair(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.value, x.dim
        return x, None

    def process(self, primitive: Primitive, args: tuple, params: dict) -> Any:
        pairs = [self.pair(a) for a in args]
        values = [v for v, _ in pairs]
        dims = [d for _, d in pairs]
        axes = params.get("axes") if isinstance(params.get("axes"), tuple) else ()
        if self.axis_name is not None and self.axis_name in axes:
            rule = primitive.rules.own_axis
            with tracing(self.parent):
                done = None if rule is None else rule(self, values, dims, params)
            if done is None:
                self._no_own_axis(primitive, axes)
            return self.wrap(*done)
        if all(d is None for d in dims):
            with tracing(self.parent):
                return primitive.bind(*values, **params)
        rule = primitive.rules.batch
        if rule is None:
            raise SpmdTypeError(
                f"{primitive.name} has no batching rule, so vmap cannot map it; add one to "
                f"its Rules in spmd/prims/, or call it outside the vmapped function."
            )
        with tracing(self.parent):
            out, out_dims = rule(values, dims, **params)
        if primitive.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dims, strict=True)]
        return self.wrap(out, out_dims)

    def _no_own_axis(self, primitive: Primitive, axes: tuple) -> None:
        rest = tuple(a for a in axes if a != self.axis_name)
        raise SpmdTypeError(
            f"vmap: {primitive.name} over the vmapped axis {self.axis_name!r}"
            + (f" together with mesh axes {rest!r}" if rest else "")
            + " is not supported; psum, pmean, pmax, pmin, all_gather and axis_index are."
        )

    def wrap(self, value: Any, dim: int | None) -> Any:
        return value if dim is None else BatchTracer(self, value, dim)


class BatchTracer(Tracer):
    """One batch member's view of a batched value: its aval lacks the batch dimension."""

    def __init__(self, trace: BatchTrace, value: Any, dim: int) -> None:
        full = aval_of(value)
        shape = full.shape[:dim] + full.shape[dim + 1 :]
        aval = ShapedArray(shape, full.dtype, full.weak_type, vma=full.vma)
        super().__init__(trace, Var(aval))
        self.value = value
        self.dim = dim

    def __repr__(self) -> str:
        return f"BatchTracer<{self.aval}, batched at {self.dim}>"

    def _why_not_concrete(self) -> str:
        return (
            f"a vmapped value {self.aval} holds one value per batch member, so Python cannot "
            f"branch on it. Use spmd.numpy.where(cond, a, b)."
        )
