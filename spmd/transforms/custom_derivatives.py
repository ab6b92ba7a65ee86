"""``custom_jvp`` and ``custom_vjp``: functions with derivative rules of their own, as in JAX.

The user's rule is wrapped here as a flat rule (``JvpRule``, ``VjpRule``) that checks what
it returns. Outside every transformation (and inside a rule whose primal work runs eagerly,
as under grad) a call simply calls the function. Under a JVP trace that holds an argument
(jvp, grad, vjp), the rule runs directly on the primals and tangents, as in JAX
(spmd/core/custom_rules.py): the function itself runs only if the rule calls it. Under other
traces (jit, vmap, shard_map, loop bodies) a call traces the function into a Program and
binds ``custom_jvp_call`` or ``custom_vjp_call`` (spmd/transforms/custom_calls.py) with it
and the rule, so that a derivative taken later still finds the rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from spmd.core.ad import zeros
from spmd.core.custom_rules import apply_rule, holds_any, home_trace
from spmd.core.trace import EVAL_TRACE, aval_of
from spmd.errors import SpmdTypeError
from spmd.transforms.custom_calls import custom_jvp_call_p, diff_tangents
from spmd.transforms.custom_layout import Layout, SymbolicZero, check_like, trace_custom
from spmd.transforms.custom_vjp import VjpRule, custom_vjp
from spmd.tree_util import tree_flatten, tree_map, tree_unflatten


class JvpRule:
    """The user's jvp rule on flat operands: ``rule(operands, tangents) -> (outs,
    out_tangents)``, None for a zero tangent in and out."""

    def __init__(self, name, rule, layout: Layout, num_consts, out_tree, out_avals, symbolic):
        self.name, self.rule, self.layout = name, rule, layout
        self.num_consts = num_consts
        self.num_static = num_consts + len(layout.nondiff_arrays)
        self.out_tree, self.out_avals, self.symbolic = out_tree, out_avals, symbolic

    def __repr__(self) -> str:
        return getattr(self.rule, "__name__", "jvp")

    def __call__(self, operands: list, tangents: list) -> tuple[list, list]:
        diff_tangents(self, operands, [t if i < self.num_consts else None
                                       for i, t in enumerate(tangents)])  # fmt: skip
        primals = operands[self.num_static :]
        filled = []
        for p, t in zip(primals, tangents[self.num_static :], strict=True):
            if t is None:
                aval = aval_of(p)
                t = SymbolicZero(aval) if self.symbolic else zeros(aval.strong())
            filled.append(t)
        nondiff = self.layout.nondiff_values(operands[self.num_consts : self.num_static])
        result = self.rule(
            *nondiff,
            tree_unflatten(self.layout.in_tree, primals),
            tree_unflatten(self.layout.in_tree, filled),
        )
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise SpmdTypeError(
                f"{self.name}: its jvp rule must return a pair (primal_out, tangent_out), got "
                f"{type(result).__name__}."
            )
        if self.out_tree is None:  # called directly (no traced function): its own output
            self.out_tree = tree_flatten(result[0])[1]
            self.out_avals = [aval_of(o) for o in tree_flatten(result[0])[0]]
        outs = check_like("jvp rule's primal output", self.name, result[0], self.out_tree,
                           self.out_avals)  # fmt: skip
        out_tangents = check_like("jvp rule's tangent output", self.name, result[1],
                                   self.out_tree, self.out_avals,
                                   is_leaf=lambda x: isinstance(x, SymbolicZero))  # fmt: skip
        return outs, [None if isinstance(t, SymbolicZero) else t for t in out_tangents]


class custom_jvp:
    """``fun`` with a forward-mode derivative rule of its own, set with ``defjvp`` (or
    ``defjvps``); reverse mode transposes the rule. Example::

        @spmd.custom_jvp
        def log1pexp(x):
            return snp.log1p(snp.exp(x))

        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return log1pexp(x), t / (1 + snp.exp(-x))
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (primal_out,
        tangent_out)``; returns it, so that it can be a decorator."""
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        """One rule per argument, ``fn(tangent, primal_out, *primals)`` (None: the argument
        contributes nothing); the output tangent is their sum."""
        if self.nondiff_argnums:
            raise SpmdTypeError(
                f"{self._name()}: defjvps cannot be used with nondiff_argnums; use defjvp."
            )

        def jvp(primals, tangents):
            out = self(*primals)
            if len(tangent_fns) != len(primals):
                raise SpmdTypeError(
                    f"{self._name()}: defjvps got {len(tangent_fns)} tangent functions but the "
                    f"function takes {len(primals)} arguments; give one (or None) per argument."
                )
            total = None
            for fn, t in zip(tangent_fns, tangents, strict=True):
                if fn is None:
                    continue
                term = fn(t, out, *primals)
                total = term if total is None else tree_map(lambda a, b: a + b, total, term)
            if total is None:
                total = tree_map(lambda o: zeros(aval_of(o).strong()), out)
            return out, total

        self.defjvp(jvp)

    def _name(self) -> str:
        return getattr(self.fun, "__name__", "function")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self._name()
        if self.jvp is None:
            raise SpmdTypeError(
                f"No JVP defined for custom_jvp function {name} using defjvp: decorate its "
                f"rule with @{name}.defjvp (or call {name}.defjvps) before calling it."
            )
        layout = Layout(self.fun, args, kwargs, self.nondiff_argnums, name)
        operands = [*layout.nondiff_arrays, *layout.diff_leaves]
        trace = home_trace(operands)
        if trace is EVAL_TRACE:
            return self.fun(*args, **kwargs)
        if holds_any(trace, operands):
            rule = JvpRule(name, self.jvp, layout, 0, None, None, self.symbolic_zeros)
            fill = None if self.symbolic_zeros else [True] * len(operands)
            outs = apply_rule(trace, rule, operands, name, fill)
            return tree_unflatten(rule.out_tree, outs)
        program, consts, out_tree = trace_custom(self.fun, layout)
        rule = JvpRule(name, self.jvp, layout, len(consts), out_tree, program.out_avals,
                       self.symbolic_zeros)  # fmt: skip
        outs = custom_jvp_call_p.bind(
            *consts, *layout.nondiff_arrays, *layout.diff_leaves,
            call=program, jvp=rule, name=name, symbolic_zeros=self.symbolic_zeros,
        )  # fmt: skip
        return tree_unflatten(out_tree, outs)


__all__ = ["JvpRule", "SymbolicZero", "VjpRule", "custom_jvp", "custom_vjp"]
