"""``closure_convert``, as JAX's: a function whose traced closed-over values become explicit
arguments, for ``custom_vjp`` (whose rules may not close over values being differentiated)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spmd.core.program import Program
from spmd.core.trace import Tracer
from spmd.errors import SpmdTypeError
from spmd.transforms.bodies import run_program
from spmd.transforms.traced import trace_leaves
from spmd.tree_util import tree_flatten, tree_unflatten


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list]:
    """``(converted, hoisted)``: ``converted(*args, *hoisted)`` is ``fun(*args)``, where
    ``hoisted`` are the traced values (of an enclosing jit, grad, vmap...) that ``fun``
    closes over; values that are not traced stay inside. ``example_args`` fix the argument
    types, as in ``make_jaxpr``.

    Example: ``f, consts = closure_convert(lambda x: x * w, x)`` inside ``grad`` over ``w``
    gives ``consts == [w]``, and ``f(x, w)`` computes ``x * w``.
    """
    leaves, in_tree = tree_flatten(example_args)
    program, out_tree = trace_leaves(lambda xs: fun(*tree_unflatten(in_tree, xs)), leaves)
    traced = [isinstance(c, Tracer) for c in program.consts]
    kept = [c for c, t in zip(program.consts, traced, strict=True) if not t]
    hoisted = [c for c, t in zip(program.consts, traced, strict=True) if t]
    kept_vars = [v for v, t in zip(program.constvars, traced, strict=True) if not t]
    hoisted_vars = [v for v, t in zip(program.constvars, traced, strict=True) if t]
    body = Program(
        [], kept_vars + program.invars + hoisted_vars, program.equations, program.outvars
    )

    def converted(*args_and_hoisted: Any) -> Any:
        count = len(args_and_hoisted) - len(hoisted)
        args, values = args_and_hoisted[:count], args_and_hoisted[count:]
        arg_leaves, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise SpmdTypeError(
                f"closure_convert: the converted function was traced for arguments {in_tree} "
                f"(then the {len(hoisted)} hoisted values), but got {tree}."
            )
        return tree_unflatten(out_tree, run_program(body, [*kept, *arg_leaves, *values]))

    return converted, hoisted
