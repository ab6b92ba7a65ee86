"""``custom_vjp``: a function with a reverse-mode derivative rule of its own (``defvjp(fwd,
bwd)``), as in JAX. Under a JVP trace holding an argument, fwd runs directly on the primals
and ``custom_lin`` (which bwd transposes) on the residuals and tangents; under other traces a
call binds ``custom_vjp_call`` (spmd/transforms/custom_calls.py) with the function's Program
and a ``VjpRule``, the user's fwd and bwd on flat operands (see custom_derivatives.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.custom_rules import apply_rule, holds_any, home_trace
from spmd.core.trace import EVAL_TRACE, aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.transforms.custom_calls import custom_vjp_call_p, vjp_rule_jvp
from spmd.transforms.custom_layout import Layout, check_like, trace_custom
from spmd.tree_util import tree_flatten, tree_unflatten


def _none_leaf(x: Any) -> bool:
    return x is None


class VjpRule:
    """The user's fwd and bwd on flat operands: ``fwd(operands) -> (outs, residual leaves,
    residual tree)``, ``bwd(residual leaves, residual tree, output cotangents) -> one
    cotangent (or None) per differentiable leaf``."""

    def __init__(self, name, fwd, bwd, layout: Layout, num_consts, out_tree, out_avals):
        self.name, self.user_fwd, self.user_bwd, self.layout = name, fwd, bwd, layout
        self.num_consts = num_consts
        self.num_static = num_consts + len(layout.nondiff_arrays)
        self.out_tree, self.out_avals = out_tree, out_avals
        self.diff_avals = [aval_of(x) for x in layout.diff_leaves]

    def __repr__(self) -> str:
        fwd, bwd = (getattr(f, "__name__", "rule") for f in (self.user_fwd, self.user_bwd))
        return f"{fwd}/{bwd}"

    def member_avals(self) -> list:
        return [a.strong() for a in self.diff_avals]

    def fwd(self, operands: list):
        arrays = operands[self.num_consts : self.num_static]
        diff = tree_unflatten(self.layout.in_tree, operands[self.num_static :])
        result = self.user_fwd(*self.layout.full_args(arrays, diff))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise SpmdTypeError(
                f"{self.name}: its fwd must return a pair (primal_out, residuals), got "
                f"{type(result).__name__}."
            )
        if self.out_tree is None:  # called directly (no traced function): its own output
            self.out_tree = tree_flatten(result[0])[1]
            self.out_avals = [aval_of(o) for o in tree_flatten(result[0])[0]]
        outs = check_like("fwd's primal output", self.name, result[0], self.out_tree,
                          self.out_avals)  # fmt: skip
        residuals, res_tree = tree_flatten(result[1])
        return outs, residuals, res_tree

    def bwd(self, residuals: list, res_tree, cotangents: list) -> list:
        res = tree_unflatten(res_tree, residuals)
        nondiff = self.layout.nondiff_values(self.layout.nondiff_arrays)
        result = self.user_bwd(*nondiff, res, tree_unflatten(self.out_tree, cotangents))
        args = self.layout.diff_args
        if not isinstance(result, (tuple, list)) or len(result) != len(args):
            got = f"a {type(result).__name__}" + (
                f" of {len(result)}" if isinstance(result, (tuple, list)) else ""
            )
            raise SpmdTypeError(
                f"{self.name}: bwd must return a tuple with one cotangent per differentiable "
                f"argument ({len(args)}: structure {tree_flatten(args)[1]}), but returned "
                f"{got}; return a tuple, using None for a zero cotangent."
            )
        found = []
        for k, (ct, arg) in enumerate(zip(result, args, strict=True)):
            arg_leaves, arg_tree = tree_flatten(arg, _none_leaf)
            if ct is None:
                found.extend([None] * len(arg_leaves))
                continue
            leaves, tree = tree_flatten(ct, _none_leaf)
            if tree != arg_tree:
                raise SpmdTypeError(
                    f"{self.name}: bwd's cotangent {k} has structure {tree}, but argument {k} "
                    f"has structure {arg_tree}; return one cotangent shaped like each argument."
                )
            for leaf, primal in zip(leaves, arg_leaves, strict=True):
                if leaf is not None:
                    have, want = aval_of(leaf), aval_of(primal)
                    if have.shape != want.shape:
                        raise ShapeError(
                            f"{self.name}: bwd's cotangent {k} has a leaf of shape {have.shape} "
                            f"where argument {k} has shape {want.shape}; each cotangent must "
                            f"match its argument's shape."
                        )
            found.extend(leaves)
        return found


class custom_vjp:
    """``fun`` with a reverse-mode derivative rule of its own, set with ``defvjp(fwd, bwd)``:
    ``fwd(*args) -> (out, residuals)``, ``bwd(*nondiff_args, residuals, out_cotangent) ->``
    a tuple with one cotangent (or None) per differentiable argument. Forward mode (jvp)
    raises. Example: ``clip_gradient`` (see tests/test_custom_derivatives.py)."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        if symbolic_zeros:
            raise SpmdValueError(
                f"{self._name()}: defvjp(symbolic_zeros=True) is not supported; leave it False "
                f"(fwd then receives plain arrays and bwd returns None or arrays)."
            )
        self.fwd, self.bwd = fwd, bwd

    def _name(self) -> str:
        return getattr(self.fun, "__name__", "function")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self._name()
        if self.fwd is None:
            raise SpmdTypeError(
                f"No VJP defined for custom_vjp function {name} using defvjp: call "
                f"{name}.defvjp(fwd, bwd) before calling it."
            )
        layout = Layout(self.fun, args, kwargs, self.nondiff_argnums, name)
        operands = [*layout.nondiff_arrays, *layout.diff_leaves]
        trace = home_trace(operands)
        if trace is EVAL_TRACE:
            return self.fun(*args, **kwargs)
        if holds_any(trace, operands):
            rule = VjpRule(name, self.fwd, self.bwd, layout, 0, None, None)

            def fwd_and_lin(primals: list, tangents: list) -> tuple[list, list]:
                return vjp_rule_jvp(rule, name, primals, tangents)

            outs = apply_rule(trace, fwd_and_lin, operands, name, [True] * len(operands))
            return tree_unflatten(rule.out_tree, outs)
        program, consts, out_tree = trace_custom(self.fun, layout)
        rule = VjpRule(name, self.fwd, self.bwd, layout, len(consts), out_tree, program.out_avals)
        outs = custom_vjp_call_p.bind(
            *consts, *layout.nondiff_arrays, *layout.diff_leaves,
            call=program, rule=rule, name=name,
        )  # fmt: skip
        return tree_unflatten(out_tree, outs)
