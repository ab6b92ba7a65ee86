"""Control with JAX's signatures: ``scan`` and ``fori_loop`` (unrolled while tracing) and
``stop_gradient``.

spmd has no loop primitive: each iteration is traced (or run) in turn, so a traced loop is
as long as its trip count, which must be known when the function is traced. The semantics
are JAX's, including its check that a scan's carry keeps its type from one iteration to
the next (shape, dtype and the mesh axes it varies over inside shard_map).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spmd.core.axes import as_int
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.shaping import stack
from spmd.prims.control import stop_gradient_p
from spmd.transforms.typeof import shown_vma, typeof
from spmd.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)


def scan(
    f: Callable,
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[Any, Any]:
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the final carry
    and the ``y``s stacked. Example: ``scan(lambda c, x: (c + x, c), 0.0, xs)``."""
    leaves, xs_tree = tree_flatten(xs)
    n = _length(leaves, length)
    carry, ys = init, []
    for i in reversed(range(n)) if reverse else range(n):
        out = f(carry, tree_unflatten(xs_tree, [leaf[i] for leaf in leaves]))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise SpmdTypeError(
                f"scan: the body must return a pair (new_carry, y), got {type(out).__name__}."
            )
        _check_carry(carry, out[0])
        carry = out[0]
        ys.append(out[1])
    if reverse:
        ys.reverse()
    return carry, tree_map(lambda *ys: stack(ys), *ys)


def fori_loop(lower: int, upper: int, body_fun: Callable, init_val: Any) -> Any:
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)`` (bounds known when the
    function is traced). Example: ``fori_loop(0, 3, lambda i, v: v * 2, x)``."""
    lower, upper = as_int(lower, "fori_loop", "lower"), as_int(upper, "fori_loop", "upper")
    value = init_val
    for i in range(lower, upper):
        new = body_fun(i, value)
        _check_carry(value, new, "fori_loop", "loop value")
        value = new
    return value


def stop_gradient(x: Any) -> Any:
    """``x`` (a pytree) unchanged, but a constant to differentiation: its derivative is zero.

    Example: ``grad(lambda w: (w * stop_gradient(w)).sum())(w)`` is ``w``, not ``2 * w``.
    """
    return tree_map(stop_gradient_p.bind, x)


def _length(leaves: list, length: int | None) -> int:
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
    if n == 0:
        raise SpmdValueError(
            "scan of length 0: spmd unrolls scans while tracing, so it cannot tell the shape "
            "of the stacked ys; give xs at least one element."
        )
    return n


def _check_carry(old: Any, new: Any, who: str = "scan", what: str = "carry") -> None:
    """The body's output carry has the input carry's structure and types, as JAX requires."""
    if tree_structure(old) != tree_structure(new):
        raise SpmdTypeError(
            f"{who} body function {what} input and {what} output must have the same pytree "
            f"structure, but got {tree_structure(old)} and {tree_structure(new)}."
        )
    paths, olds, _ = tree_flatten_with_path(old)
    for path, before, after in zip(paths, olds, tree_leaves(new), strict=True):
        a_in, a_out = aval_of(before), aval_of(after)
        dtypes_differ = a_in.dtype != a_out.dtype and not (a_in.weak_type or a_out.weak_type)
        if (
            a_in.shape == a_out.shape
            and not dtypes_differ
            and shown_vma(before) == shown_vma(after)
        ):
            continue
        t_in, t_out = typeof(before), typeof(after)  # types as spmd.typeof shows them
        where = keystr(path, what)
        fix = ""
        if t_in.vma != t_out.vma:
            order = t_out.mesh_axes or t_in.mesh_axes
            axes = tuple(a for a in order if a in t_out.vma ^ t_in.vma)
            fix = (
                f" The varying manual axes differ: apply spmd.lax.pcast(..., {axes!r}, "
                f"to='varying') to the initial value of {where}."
            )
        raise SpmdTypeError(
            f"{who} body function {what} input and {what} output must have equal types, but "
            f"the input {where} has type {t_in} and the output has type {t_out}.{fix}"
        )


__all__ = ["fori_loop", "scan", "stop_gradient"]
