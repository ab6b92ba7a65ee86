"""What ``custom_jvp`` and ``custom_vjp`` share (spmd/transforms/custom_derivatives.py,
spmd/transforms/custom_vjp.py): symbolic zeros, how a call's arguments become operands, the
tracing of the function, and the check of what a user's rule returns.

The operands of a call are: the values the function closes over, then the arrays among its
``nondiff_argnums`` arguments, then the leaves of its other (differentiable) arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import zeros
from spmd.core.aval import ShapedArray
from spmd.core.program import Program
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.transforms.traced import hoisted, trace_leaves
from spmd.tree_util import tree_flatten, tree_unflatten


class SymbolicZero:
    """A tangent known to be zero, given to a ``defjvp(..., symbolic_zeros=True)`` rule in
    place of a zero array (and which the rule may return for a zero output tangent)."""

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))

    def instantiate(self) -> Any:
        """The zero as an array."""
        return zeros(self.aval.strong())

    def __repr__(self) -> str:
        return f"SymbolicZero({self.aval})"


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, SymbolicZero)


class Layout:
    """One call's arguments sorted into static values, nondiff arrays and differentiable
    leaves, and how to put them back together."""

    def __init__(self, fun: Callable, args: tuple, kwargs: dict, nondiff_argnums, name: str):
        if kwargs:
            args = inspect.signature(fun).bind(*args, **kwargs).args
        count = len(args)
        positions = set()
        for k in nondiff_argnums:
            if not -count <= k < count:
                raise SpmdTypeError(
                    f"{name}: nondiff_argnums {tuple(nondiff_argnums)} names argument {k}, but "
                    f"it was called with {count} positional arguments."
                )
            positions.add(k % count)
        self.count = count
        self.nondiff = sorted(positions)
        self.array_positions = [k for k in self.nondiff if _is_array(args[k])]
        self.static = {k: args[k] for k in self.nondiff if k not in self.array_positions}
        self.nondiff_arrays = [args[k] for k in self.array_positions]
        self.diff_args = tuple(a for k, a in enumerate(args) if k not in positions)
        self.diff_leaves, self.in_tree = tree_flatten(self.diff_args)

    def nondiff_values(self, arrays: Sequence[Any]) -> list:
        """The nondiff arguments in order, with ``arrays`` for those that are arrays."""
        found = dict(self.static)
        found.update(zip(self.array_positions, arrays, strict=True))
        return [found[k] for k in self.nondiff]

    def full_args(self, arrays: Sequence[Any], diff_args: Sequence[Any]) -> list:
        found = dict(zip(self.nondiff, self.nondiff_values(arrays), strict=True))
        rest = iter(diff_args)
        return [found[k] if k in found else next(rest) for k in range(self.count)]


def trace_custom(fun: Callable, layout: Layout) -> tuple[Program, list, Any]:
    """``fun`` traced on the layout's operands: its Program (closed-over values hoisted into
    the first operands), those values, and its output tree."""
    split = len(layout.nondiff_arrays)

    def call(tracers):
        diff = tree_unflatten(layout.in_tree, tracers[split:])
        return fun(*layout.full_args(tracers[:split], diff))

    traced, out_tree = trace_leaves(call, [*layout.nondiff_arrays, *layout.diff_leaves])
    program, consts = hoisted(traced)
    return program, consts, out_tree


def check_like(what: str, name: str, got: Any, tree, avals: Sequence[ShapedArray], is_leaf=None):
    """``got``'s leaves, after checking that it has ``tree``'s structure and ``avals``'
    shapes and dtypes (``what`` says which value it is, for the error)."""
    leaves, got_tree = tree_flatten(got, is_leaf)
    if got_tree != tree:
        raise SpmdTypeError(
            f"{name}: the {what} has structure {got_tree}, but the primal output of {name} "
            f"has structure {tree}; the rule must return values shaped like the function's."
        )
    for i, (leaf, aval) in enumerate(zip(leaves, avals, strict=True)):
        if leaf is None or isinstance(leaf, SymbolicZero):
            continue
        have = aval_of(leaf)
        if have.shape != aval.shape or (_is_array(leaf) and have.dtype != aval.dtype):
            raise ShapeError(
                f"{name}: leaf {i} of the {what} is {have}, "
                f"but the primal output of {name} there is {aval}; return a value of that shape "
                f"and dtype."
            )
    return leaves
