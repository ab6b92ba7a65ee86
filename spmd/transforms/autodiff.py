"""``jvp``, ``vjp``, ``grad`` and ``value_and_grad`` over pytrees, as in JAX (spmd/core/ad.py
does the differentiating). They compose with jit: inside it the backward pass is traced into
the same program, so it is sharded and partitioned with the forward one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.ad import JVPTracer, jvp_call, linearize, transpose, zeros
from spmd.core.trace import Tracer, aval_of, current_trace
from spmd.errors import ShapeError, SpmdTypeError
from spmd.runtime.array import Array
from spmd.runtime.constrain import constrain
from spmd.sharding.named import NamedSharding
from spmd.transforms.typeof import PropagatedTypes
from spmd.tree_util import tree_flatten, tree_map, tree_unflatten


def _flat(fun: Callable, in_tree, has_aux: bool, store: dict) -> Callable:
    """``fun`` on flat leaves, returning flat output leaves; its tree (and aux) into ``store``."""

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise SpmdTypeError(
                    f"has_aux=True needs the function to return a pair (output, aux), got "
                    f"{type(out).__name__}."
                )
            out, store["aux"] = out
        out_leaves, store["tree"] = tree_flatten(out)
        return out_leaves

    return flat_fun


def _inexact(x: Any) -> bool:
    return np.issubdtype(aval_of(x).dtype, np.inexact)


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``fun(*primals)`` and its directional derivative along ``tangents`` (forward mode).

    Example: ``jvp(spmd.numpy.sin, (x,), (t,))`` is ``(sin(x), cos(x) * t)``.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise SpmdTypeError("jvp: primals and tangents must be tuples (or lists) of arguments.")
    leaves, in_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if t_tree != in_tree:
        raise ShapeError(f"jvp: tangents {t_tree} must have the structure of primals {in_tree}.")
    for i, (p, t) in enumerate(zip(leaves, t_leaves, strict=True)):
        if aval_of(p).shape != aval_of(t).shape:
            raise ShapeError(
                f"jvp: tangent {i} has shape {aval_of(t).shape} but its primal has shape "
                f"{aval_of(p).shape}; each tangent must match its primal's shape."
            )
    store: dict = {}
    tangents_in = [t if _inexact(p) else None for p, t in zip(leaves, t_leaves, strict=True)]
    outs, out_tangents = jvp_call(
        _flat(fun, in_tree, False, store), leaves, tangents_in, current_trace()
    )
    out_tangents = [
        t if t is not None else zeros(aval_of(o)) for o, t in zip(outs, out_tangents, strict=True)
    ]
    return tree_unflatten(store["tree"], outs), tree_unflatten(store["tree"], out_tangents)


def vjp(fun: Callable, *primals: Any, has_aux: bool = False):
    """``fun(*primals)`` and a function taking a cotangent of the output to the cotangents of
    the inputs (reverse mode); with ``has_aux``, also the aux value ``fun`` returned.

    Example: ``y, back = vjp(f, x); (ct_x,) = back(np.ones_like(y))``.
    """
    leaves, in_tree = tree_flatten(primals)
    store: dict = {}
    linear_in = [_inexact(x) for x in leaves]
    outs, program, has_tangent = linearize(_flat(fun, in_tree, has_aux, store), leaves, linear_in)
    out_tree = store["tree"]

    def pullback(cotangent: Any) -> tuple:
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != out_tree:
            raise ShapeError(
                f"vjp: the cotangent's structure {ct_tree} must match the output's {out_tree}."
            )
        for i, (ct, out) in enumerate(zip(ct_leaves, outs, strict=True)):
            if aval_of(ct).shape != aval_of(out).shape:
                raise ShapeError(
                    f"vjp: cotangent {i} has shape {aval_of(ct).shape} but output {i} has "
                    f"shape {aval_of(out).shape}."
                )
        wanted = [ct for ct, has in zip(ct_leaves, has_tangent, strict=True) if has]
        found = iter(transpose(program, program.consts, wanted))
        cts = [next(found) if lin else None for lin in linear_in]
        cts = [
            _laid_out_like(ct if ct is not None else zeros(aval_of(x).strong()), x)
            for ct, x in zip(cts, leaves, strict=True)
        ]
        return tree_unflatten(in_tree, cts)

    out = tree_unflatten(out_tree, outs)
    return (out, pullback, undifferentiated(store["aux"])) if has_aux else (out, pullback)


def undifferentiated(aux: Any) -> Any:
    """An aux value as the caller sees it: each leaf that is a value of a finished JVP trace
    replaced by its primal (aux is not differentiated, and its tracer would escape)."""

    def primal(x: Any) -> Any:
        while isinstance(x, JVPTracer) and not x._trace.active:
            x = x.primal
        return x

    return tree_map(primal, aux)


def _laid_out_like(ct: Any, x: Any) -> Any:
    """A cotangent laid out as its primal: an Array's sharding, or, inside jit, the sharding
    of the argument it is (so that a sharded weight's gradient is reduce-scattered into the
    weight's blocks, not all-reduced)."""
    sharding = None
    if isinstance(x, Array) and isinstance(x.sharding, NamedSharding):
        sharding = x.sharding
    elif isinstance(x, Tracer) and isinstance(getattr(x._trace, "types", None), PropagatedTypes):
        types = x._trace.types
        invars = x._trace.invars
        position = next((i for i, v in enumerate(invars) if v is x.node), None)
        if position is not None and types.in_shardings[position] is not None:
            sharding = NamedSharding(types.mesh, types.in_shardings[position].spec)
    if sharding is None or aval_of(ct).shape != aval_of(x).shape:
        return ct
    return constrain(ct, sharding, "the gradient of an argument")


def argnums_partial(fun: Callable, argnums, args: tuple, kwargs: dict, name: str):
    """``fun`` as a function of the arguments ``argnums`` only (the others and ``kwargs``
    fixed), and those arguments (a tuple)."""
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not positions:
        raise SpmdTypeError(f"{name}: argnums is empty; name at least one argument.")
    for k in positions:
        if not isinstance(k, (int, np.integer)) or not -len(args) <= k < len(args):
            raise SpmdTypeError(
                f"{name}: argnums {argnums!r} names argument {k}, but the function was "
                f"called with {len(args)} positional arguments."
            )
    positions = tuple(int(k) % len(args) for k in positions)

    def partial_fun(*diff):
        full = list(args)
        for k, value in zip(positions, diff, strict=True):
            full[k] = value
        return fun(*full, **kwargs)

    return partial_fun, tuple(args[k] for k in positions)


def check_input_dtype(name: str, holomorphic: bool, x: Any, forward: bool = False) -> None:
    """JAX's checks of an argument differentiated by ``name``: complex when ``holomorphic``;
    else float or complex (reverse mode), float (forward mode: ``jacfwd``)."""
    dtype = aval_of(x).dtype
    if holomorphic:
        if dtype.kind != "c":
            raise SpmdTypeError(
                f"{name} with holomorphic=True requires inputs with complex dtype, but got "
                f"{dtype.name}; pass complex arguments (e.g. x.astype(complex)), or drop "
                f"holomorphic=True."
            )
    elif forward and dtype.kind != "f":
        raise SpmdTypeError(
            f"{name} requires real-valued inputs (a float dtype), but got {dtype.name}. For "
            f"holomorphic differentiation, pass holomorphic=True. For non-holomorphic "
            f"functions of complex or integer inputs, use spmd.jvp directly."
        )
    elif not np.issubdtype(dtype, np.inexact):
        raise SpmdTypeError(
            f"{name} requires real- or complex-valued inputs, but got a leaf of dtype "
            f"{dtype.name}; differentiate with respect to float arguments only (convert it, "
            f"or leave it out of argnums), or use spmd.vjp."
        )


def check_output_dtype(name: str, holomorphic: bool, x: Any, reverse: bool = True) -> None:
    """JAX's checks of a result differentiated by ``name``: complex when ``holomorphic``;
    else (reverse mode) real."""
    dtype = aval_of(x).dtype
    if holomorphic:
        if dtype.kind != "c":
            raise SpmdTypeError(
                f"{name} with holomorphic=True requires outputs with complex dtype, but got "
                f"{dtype.name}; drop holomorphic=True for a real-valued function."
            )
    elif reverse and dtype.kind == "c":
        raise SpmdTypeError(
            f"{name} requires real-valued outputs (a float dtype), but got {dtype.name}. For "
            f"holomorphic differentiation, pass holomorphic=True. For non-holomorphic "
            f"functions with complex outputs, use spmd.vjp directly."
        )
    elif reverse and dtype.kind != "f":
        raise SpmdTypeError(
            f"{name} requires real-valued outputs (a float dtype), but got {dtype.name}; for "
            f"functions with integer outputs, use spmd.vjp directly."
        )


def value_and_grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """A function returning ``fun``'s value and its gradient with respect to the arguments
    ``argnums`` (``fun`` must return a real scalar; with ``holomorphic``, a complex scalar
    of complex arguments, whose gradient is the complex derivative f'(z)). With
    ``has_aux``: ``((value, aux), grad)``.

    Example: ``value_and_grad(lambda w: ((x @ w) ** 2).sum())(w)``.
    """
    many = not isinstance(argnums, int)
    name = "grad"

    def value_and_grad_fun(*args, **kwargs):
        partial_fun, chosen = argnums_partial(fun, argnums, args, kwargs, name)
        for leaf in tree_flatten(chosen)[0]:
            check_input_dtype(name, holomorphic, leaf)
        result = vjp(partial_fun, *chosen, has_aux=has_aux)
        value, pullback = result[0], result[1]
        _check_scalar(value)
        check_output_dtype(name, holomorphic, value)
        grads = pullback(np.ones((), aval_of(value).dtype))
        grads = grads if many else grads[0]
        return ((value, result[2]) if has_aux else value), grads

    return value_and_grad_fun


def grad(
    fun: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """A function returning the gradient of ``fun`` (a real scalar) with respect to the
    arguments ``argnums``; with ``has_aux``, ``(grad, aux)``. With ``holomorphic``, ``fun``
    maps complex arguments to a complex scalar and the gradient is f'(z), as in JAX.

    Example: ``grad(lambda x: (x ** 2).sum())(x)`` is ``2 * x``.
    """
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic)

    def grad_fun(*args, **kwargs):
        value, grads = value_and_grad_fun(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_fun


def _check_scalar(value: Any) -> None:
    leaves, tree = tree_flatten(value)
    if len(leaves) != 1 or aval_of(leaves[0]).shape != ():
        shown = aval_of(leaves[0]) if len(leaves) == 1 else tree
        raise SpmdTypeError(
            f"grad requires a function that returns one scalar, but it returned {shown}; "
            f"reduce it first (e.g. .sum()), or use spmd.vjp for non-scalar outputs."
        )
