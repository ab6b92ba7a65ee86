"""Control flow with JAX's signatures: ``cond``, ``switch``, ``while_loop``, ``fori_loop``,
``scan``, ``map``, ``select``, and ``stop_gradient``.

Each traces its functions once into Programs held by one equation (the primitives of
spmd/transforms/control_flow/), so a traced program does not grow with the trip count. The
semantics are JAX's, including its checks: a loop body keeps its carry's type (shape, dtype
and the mesh axes it varies over inside shard_map; a weakly typed initial value takes the
body's dtype), the branches of a cond return one type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.axes import as_int
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.lax.control_checks import check_carry, joined_outputs
from spmd.lax.unroll import join_blocks, split_blocks, unroll_factor, unrolled
from spmd.numpy.shaping import concatenate, reshape
from spmd.prims.control import stop_gradient_p
from spmd.prims.elementwise import where_p
from spmd.prims.shape import convert_element_type_p
from spmd.transforms.control_flow.cond import bind_cond
from spmd.transforms.control_flow.programs import close, operand_aval, trace_program
from spmd.transforms.control_flow.scan import bind_scan
from spmd.transforms.control_flow.while_loop import bind_while
from spmd.transforms.vmap import vmap
from spmd.tree_util import (
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_structure,
    tree_unflatten,
)

_INT32 = np.dtype(np.int32)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one equation
    whose branches are both traced. Example: ``cond(x.sum() > 0, jnp.sin, jnp.cos, x)``."""
    if not callable(true_fun) and callable(false_fun) and len(operands) == 2:
        # JAX's older form: cond(pred, true_operand, true_fun, false_operand, false_fun)
        t_op, t_fun, (f_op, f_fun) = true_fun, false_fun, operands
        if callable(f_fun):
            return cond(pred, lambda ops: t_fun(ops[0]), lambda ops: f_fun(ops[1]), (t_op, f_op))
    for name, fun in (("true_fun", true_fun), ("false_fun", false_fun)):
        if not callable(fun):
            raise SpmdTypeError(f"cond: {name} must be callable, got {type(fun).__name__}.")
    aval = aval_of(pred)
    if aval.ndim != 0:
        raise SpmdTypeError(
            f"cond: the predicate must be a scalar, got {aval}; reduce it first (e.g. "
            f"pred.all()), or use spmd.numpy.where / lax.select for an elementwise choice."
        )
    if aval.dtype.kind == "b":
        index = _as_int32(pred)
    elif aval.dtype.kind in "iu":
        index = _as_int32(_not_zero(pred))
    else:
        raise SpmdTypeError(
            f"cond: the predicate must be a boolean or integer scalar, got {aval}; compare it "
            f"(e.g. x > 0) to make a boolean."
        )
    return _branches(index, [false_fun, true_fun], operands, "cond")


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, ``index`` clamped to ``[0, len(branches) - 1]`` as
    JAX clamps it. Example: ``switch(k, [jnp.sin, jnp.cos, jnp.tanh], x)``."""
    branches = list(branches)
    if not branches or not all(callable(b) for b in branches):
        raise SpmdTypeError("switch: branches must be a non-empty sequence of callables.")
    aval = aval_of(index)
    if aval.ndim != 0 or aval.dtype.kind not in "iu":
        raise SpmdTypeError(f"switch: the index must be an integer scalar, got {aval}.")
    if len(branches) == 1:
        return branches[0](*operands)
    if isinstance(index, Tracer):
        index = where_p.bind(_bind("less", index, 0), 0, index)
        index = where_p.bind(_bind("greater", index, len(branches) - 1), len(branches) - 1, index)
        index = _as_int32(index)
    else:
        index = np.int32(min(max(int(index), 0), len(branches) - 1))
    return _branches(index, branches, operands, "switch")


def _branches(index: Any, funs: list[Callable], operands: tuple, who: str) -> Any:
    leaves, in_tree = tree_flatten(operands)
    avals = [operand_aval(x) for x in leaves]
    traced = [_trace(fun, in_tree, avals) for fun in funs]
    out_tree = traced[0][1]
    names = (
        ["false_fun", "true_fun"] if who == "cond" else [f"branch {b}" for b in range(len(funs))]
    )
    for b, (_, tree, _) in enumerate(traced):
        if tree != out_tree:
            raise SpmdTypeError(
                f"{who}: the branch outputs must have the same pytree structure, but "
                f"{names[0]} returns {out_tree} and {names[b]} returns {tree}."
            )
    paths = tree_flatten_with_path(tree_unflatten(out_tree, traced[0][2]))[0]
    targets = joined_outputs([outs for _, _, outs in traced], paths, who, names)
    programs = []
    for fun, (program, _, outs) in zip(funs, traced, strict=True):
        if any(t is not None and aval_of(o).weak_type for t, o in zip(targets, outs, strict=True)):
            program = _trace(fun, in_tree, avals, cast=targets)[0]
        programs.append(program)
    return tree_unflatten(out_tree, bind_cond(index, leaves, programs))


def _trace(fun: Callable, in_tree, avals, cast: list | None = None):
    """``fun`` traced on leaves of ``avals``: (its Program, output tree, output leaves);
    ``cast[k]``: the dtype a weakly typed output leaf k becomes."""
    found: list = []

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        outs, tree = tree_flatten(out)
        if cast is not None:
            outs = [
                convert_element_type_p.bind(o, new_dtype=t)
                if t is not None and aval_of(o).weak_type
                else o
                for o, t in zip(outs, cast, strict=True)
            ]
        found[:] = [tree, outs]
        return outs

    program = trace_program(flat, avals)
    return program, found[0], found[1]


def _carry_body(step: Callable, init: Any, extra_avals: list, who: str, what: str):
    """A loop body ``step(carry, *extra) -> (new_carry, rest leaves)`` traced with its carry
    checked: (Program: (carry leaves, extra leaves) -> (new carry leaves, rest leaves), the
    initial carry leaves (weakly typed ones cast to the body's dtype, as JAX does), the carry
    tree, the tree of ``rest``)."""
    leaves, tree = tree_flatten(init)
    for _ in range(len(leaves) + 1):  # each pass makes one more weak leaf strong, or ends
        promote: dict[int, np.dtype] = {}
        found: list = []

        def flat(*args, leaves=leaves, promote=promote, found=found):
            carry = tree_unflatten(tree, list(args[: len(leaves)]))
            new, rest = step(carry, *args[len(leaves) :])
            if tree_structure(new) == tree:
                for k, (a, b) in enumerate(zip(args, tree_flatten(new)[0], strict=False)):
                    a_in, a_out = aval_of(a), aval_of(b)
                    if (
                        a_in.weak_type
                        and a_in.shape == a_out.shape
                        and (a_in.dtype != a_out.dtype or not a_out.weak_type)
                    ):
                        promote[k] = a_out.dtype
            if promote:
                found[:] = [None]
                return []
            new_leaves = check_carry(carry, new, who, what)
            rest_leaves, rest_tree = tree_flatten(rest)
            found[:] = [rest_tree]
            return new_leaves + rest_leaves

        avals = [operand_aval(x) for x in leaves] + list(extra_avals)
        program = trace_program(flat, avals)
        if not promote:
            return program, leaves, tree, found[0]
        leaves = [
            convert_element_type_p.bind(x, new_dtype=promote[k]) if k in promote else x
            for k, x in enumerate(leaves)
        ]
    raise AssertionError("unreachable: a promoted carry is strongly typed")


def scan(
    f: Callable,
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the final carry
    and the ``y``s stacked. ``unroll=k`` runs ``k`` steps per trip through the loop (same
    results). Example: ``scan(lambda c, x: (c + x, c), 0.0, xs)``."""
    xs_leaves, xs_tree = tree_flatten(xs)
    n = _length(xs_leaves, length)
    k = unroll_factor(unroll, n)
    if k > 1:
        blocks, left = split_blocks(xs, n, k, bool(reverse))
        carry, ys = scan(unrolled(f, k, bool(reverse)), init, blocks, n // k, reverse)
        ys_left = None
        if n % k:
            carry, ys_left = scan(f, carry, left, n % k, reverse)
        return carry, join_blocks(ys, ys_left, bool(reverse))
    slices = []
    for x in xs_leaves:
        a = operand_aval(x)
        slices.append(a.__class__(a.shape[1:], a.dtype, a.weak_type, vma=a.vma))

    def step(carry, *x_leaves):
        out = f(carry, tree_unflatten(xs_tree, list(x_leaves)))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise SpmdTypeError(
                f"scan: the body must return a pair (new_carry, y), got {type(out).__name__}."
            )
        return out

    program, init_leaves, carry_tree, y_tree = _carry_body(step, init, slices, "scan", "carry")
    outs = bind_scan(program, [], init_leaves, xs_leaves, n, bool(reverse))
    count = len(init_leaves)
    return tree_unflatten(carry_tree, outs[:count]), tree_unflatten(y_tree, outs[count:])


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(val)`` while ``cond_fun(val)``; returns the last ``val``. Example:
    ``while_loop(lambda v: v < 10, lambda v: v * 2, 1)`` is 16."""
    tree = tree_structure(init_val)

    def step(carry):
        return body_fun(carry), ()

    body, init_leaves, _, _ = _carry_body(step, init_val, [], "while_loop", "carry")
    avals = [operand_aval(x) for x in init_leaves]
    cond_program, _, outs = _trace(cond_fun, tree_structure((init_val,)), avals)
    if len(outs) != 1 or aval_of(outs[0]).shape != () or aval_of(outs[0]).dtype != np.bool_:
        got = [str(aval_of(o)) for o in outs]
        raise SpmdTypeError(
            f"while_loop: cond_fun must return a boolean scalar, but got output type(s) {got}."
        )
    (cond_closed,), cond_consts = close([cond_program])
    (body_closed,), body_consts = close([body])
    found = bind_while(cond_closed, body_closed, cond_consts, body_consts, init_leaves)
    return tree_unflatten(tree, found)


def fori_loop(
    lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: int | bool | None = None
) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``. With static (Python
    or NumPy) bounds it is a scan, so reverse-mode derivatives work; traced bounds make it a
    while_loop. Example: ``fori_loop(0, 3, lambda i, v: v * 2, x)``."""
    for name, bound in (("lower", lower), ("upper", upper)):
        kind = aval_of(bound).dtype.kind
        if kind not in "iu" or aval_of(bound).ndim != 0:
            raise SpmdTypeError(
                f"fori_loop: {name} must be an integer scalar, got {aval_of(bound)}; the loop "
                f"index is an integer."
            )

    def body(i, val):
        new = body_fun(i, val)
        return tree_unflatten(tree_structure(val), check_carry(val, new, "fori_loop", "loop value"))

    if not _static(lower) or not _static(upper):
        if unroll is not None and unroll is not False and unroll != 1:
            raise SpmdTypeError(
                f"fori_loop: unroll={unroll!r} needs static bounds (Python or NumPy ints), "
                f"since it unrolls a scan; with traced bounds the loop is a while_loop. Drop "
                f"unroll, or make the bounds static."
            )

        def step(carry):
            i, stop, val = carry
            return i + 1, stop, body(i, val)

        start, stop = _common_int(lower, upper)
        _, _, result = while_loop(lambda c: c[0] < c[1], step, (start, stop, init_val))
        return result
    start, stop = int(lower), int(upper)
    python_bounds = type(lower) is int and type(upper) is int

    def scan_step(carry, _):
        i, val = carry
        # An index counted from Python ints is one too: weakly typed, so that ``v + i`` keeps
        # a float32 ``v`` float32 (JAX's int32 index does so by its promotion rules).
        if python_bounds:
            i_seen = convert_element_type_p.bind(i, new_dtype=aval_of(i).dtype, weak_type=True)
        else:
            i_seen = i
        return (i + 1, body(i_seen, val)), ()

    (_, result), _ = scan(
        scan_step, (start, init_val), None, length=max(stop - start, 0), unroll=unroll or 1
    )
    return result


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` applied to each slice of ``xs`` along its leading axis, the results stacked
    (a scan; ``batch_size``: that many slices at a time, through vmap)."""
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    size = as_int(batch_size, "map", "batch_size")
    if size < 1:
        raise SpmdTypeError(f"map: batch_size must be positive, got {size}.")
    n = _length(tree_flatten(xs)[0], None)
    whole, rest = n // size * size, n % size
    batched = tree_map(lambda x: reshape(x[:whole], (n // size, size, *x.shape[1:])), xs)
    ys = scan(lambda _, x: ((), vmap(f)(x)), (), batched)[1]
    ys = tree_map(lambda y: reshape(y, (whole, *y.shape[2:])), ys)
    if not rest:
        return ys
    tail = vmap(f)(tree_map(lambda x: x[whole:], xs))
    return tree_map(lambda a, b: concatenate([a, b]), ys, tail)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where ``pred`` holds, else ``on_false`` (JAX's lax.select: a boolean
    ``pred`` of their shape or a scalar, and cases of one shape and dtype)."""
    p, t, f = aval_of(pred), aval_of(on_true), aval_of(on_false)
    if p.dtype != np.bool_:
        raise SpmdTypeError(f"select: pred must be boolean, got {p}.")
    if t.shape != f.shape or t.dtype != f.dtype:
        raise SpmdTypeError(
            f"select: on_true and on_false must have the same shape and dtype, got {t} and {f}."
        )
    if p.shape not in ((), t.shape):
        raise ShapeError(f"select: pred {p} must be a scalar or have the cases' shape {t.shape}.")
    return where_p.bind(pred, on_true, on_false)


def stop_gradient(x: Any) -> Any:
    """``x`` (a pytree) unchanged, but a constant to differentiation: its derivative is zero.

    Example: ``grad(lambda w: (w * stop_gradient(w)).sum())(w)`` is ``w``, not ``2 * w``.
    """
    return tree_map(stop_gradient_p.bind, x)


def _bind(name: str, *args: Any) -> Any:
    from spmd.core.primitive import primitive_named

    return primitive_named(name).bind(*args)


def _as_int32(x: Any) -> Any:
    return convert_element_type_p.bind(x, new_dtype=_INT32)


def _not_zero(x: Any) -> Any:
    return _bind("not_equal", x, 0)


def _static(x: Any) -> bool:
    return not isinstance(x, Tracer)


def _common_int(lower: Any, upper: Any) -> tuple[Any, Any]:
    dtype = np.promote_types(aval_of(lower).dtype, aval_of(upper).dtype)
    return tuple(convert_element_type_p.bind(b, new_dtype=dtype) for b in (lower, upper))


def _length(leaves: list, length: Any) -> int:
    if isinstance(length, Tracer):
        raise SpmdTypeError(
            f"scan: length must be a static int (it fixes the program's shapes), got a traced "
            f"value {length.aval}; pass a Python int, or mark it static with "
            f"jit(..., static_argnums=...)."
        )
    sizes = set()
    for leaf in leaves:
        aval = aval_of(leaf)
        if aval.ndim == 0:
            raise ShapeError(f"scan: xs leaf {aval} has no leading axis to scan over.")
        sizes.add(aval.shape[0])
    if length is not None:
        sizes.add(as_int(length, "scan", "length"))
    if len(sizes) != 1:
        raise ShapeError(
            f"scan: the leading axes of xs and length must agree, got sizes {sorted(sizes)}"
            if sizes
            else "scan: with no xs, give length= (the number of iterations)."
        )
    (n,) = sizes
    return n


__all__ = ["cond", "fori_loop", "map", "scan", "select", "stop_gradient", "switch", "while_loop"]
