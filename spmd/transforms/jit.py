"""jit and make_jaxpr: trace a function once per signature, cache the Program, run it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spmd.core.interpret import eval_program
from spmd.core.program import Program
from spmd.core.trace import ProgramTrace, aval_of, tracing
from spmd.errors import SpmdTypeError
from spmd.runtime.array import Array
from spmd.runtime.eager import result_sharding, to_host
from spmd.runtime.put import device_put
from spmd.tree_util import tree_flatten, tree_unflatten


def _as_tuple(x: int | Sequence[int] | str | Sequence[str]) -> tuple:
    return (x,) if isinstance(x, (int, str)) else tuple(x)


@dataclass(frozen=True)
class _Traced:
    program: Program
    out_tree: Any


class Jitted:
    """A function compiled per signature: shapes, dtypes, shardings and static arguments."""

    def __init__(
        self,
        fun: Callable,
        *,
        static_argnums=(),
        static_argnames=(),
        out_shardings=None,
        in_shardings=None,
        donate_argnums=(),
    ) -> None:
        self.fun = fun
        self.static_argnums = _as_tuple(static_argnums)
        self.static_argnames = _as_tuple(static_argnames)
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.donate_argnums = _as_tuple(donate_argnums)
        self._cache: dict = {}
        functools.update_wrapper(self, fun)

    def _split(self, args: tuple, kwargs: dict):
        static = []
        for i in self.static_argnums:
            if i >= len(args):
                raise SpmdTypeError(
                    f"jit({self.__name__}): static_argnums has {i}, but the call passed only "
                    f"{len(args)} positional arguments."
                )
            static.append((i, args[i]))
        static += [(name, kwargs[name]) for name in self.static_argnames if name in kwargs]
        for where, value in static:
            try:
                hash(value)
            except TypeError:
                raise SpmdTypeError(
                    f"jit({self.__name__}): static argument {where!r} is {type(value).__name__}, "
                    f"which is not hashable; static arguments key the cache. Pass a tuple "
                    f"instead of a list, or make the argument dynamic."
                ) from None
        dynamic_args = [a for i, a in enumerate(args) if i not in self.static_argnums]
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return tuple(static), (dynamic_args, dynamic_kwargs)

    def _call_with(self, static, leaves_in, in_tree):
        args, kwargs = tree_unflatten(in_tree, leaves_in)
        full = list(args)
        for i, value in sorted((i, v) for i, v in static if isinstance(i, int)):
            full.insert(i, value)
        kwargs.update({k: v for k, v in static if isinstance(k, str)})
        return self.fun(*full, **kwargs)

    def trace(self, *args, **kwargs) -> tuple[_Traced, list, tuple]:
        static, dynamic = self._split(args, kwargs)
        leaves, in_tree = tree_flatten(dynamic)
        avals = [aval_of(leaf) for leaf in leaves]
        shardings = tuple(leaf.sharding if isinstance(leaf, Array) else None for leaf in leaves)
        key = (in_tree, tuple(avals), shardings, static)
        traced = self._cache.get(key)
        if traced is None:
            trace = ProgramTrace()
            tracers = [trace.new_arg(aval) for aval in avals]
            with tracing(trace):
                out = self._call_with(static, tracers, in_tree)
            out_leaves, out_tree = tree_flatten(out)
            program = trace.finish([t.var for t in tracers], out_leaves)
            traced = self._cache[key] = _Traced(program, out_tree)
        return traced, leaves, shardings

    def __call__(self, *args, **kwargs):
        from spmd.core.trace import current_trace

        if isinstance(current_trace(), ProgramTrace):  # inside another trace: inline
            return self.fun(*args, **kwargs)
        traced, leaves, _ = self.trace(*args, **kwargs)
        values = eval_program(traced.program, traced.program.consts, [to_host(x) for x in leaves])
        outs = []
        targets = self._out_targets(traced)
        for value, aval, target in zip(values, traced.program.out_avals, targets, strict=True):
            value = np.asarray(value)
            if value.dtype != aval.dtype:
                raise RuntimeError(f"internal error: jit computed {value.dtype} for {aval}")
            outs.append(device_put(value, target or result_sharding(leaves, aval.shape)))
        return tree_unflatten(traced.out_tree, outs)

    def _out_targets(self, traced: _Traced) -> list:
        count = traced.out_tree.num_leaves
        if self.out_shardings is None:
            return [None] * count
        from spmd.runtime.put import _is_target
        from spmd.tree_util import tree_broadcast_prefix, tree_leaves

        if _is_target(self.out_shardings):
            return [self.out_shardings] * count
        full = tree_unflatten(traced.out_tree, [None] * count)
        return tree_leaves(
            tree_broadcast_prefix(self.out_shardings, full, is_leaf=_is_target),
            is_leaf=lambda x: x is None or _is_target(x),
        )

    def lower(self, *args, **kwargs) -> Lowered:
        traced, _, _ = self.trace(*args, **kwargs)
        return Lowered(traced.program)


@dataclass(frozen=True)
class Lowered:
    program: Program

    def as_text(self) -> str:
        return str(self.program)


def jit(
    fun: Callable | None = None,
    *,
    in_shardings=None,
    out_shardings=None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
):
    """Compile ``fun``: trace it once per signature and run the cached Program after.

    Example: ``f = spmd.jit(lambda x: 2 * spmd.numpy.sin(x) + 1); f(spmd.numpy.arange(32.))``.
    """
    options = dict(
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
    )
    if fun is None:
        return lambda f: Jitted(f, **options)
    return Jitted(fun, **options)


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = ()):
    """``make_jaxpr(f)(*args)`` traces ``f`` and returns its Program (printable like a jaxpr)."""

    @functools.wraps(fun)
    def traced(*args, **kwargs) -> Program:
        return Jitted(fun, static_argnums=static_argnums).trace(*args, **kwargs)[0].program

    return traced
