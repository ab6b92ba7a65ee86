"""The checks lax's control flow makes on what its functions return, as JAX makes them: a
loop body keeps its carry's type, the branches of a cond agree. Errors name the carry or
branch output leaf (its pytree path) and both types."""

from __future__ import annotations

from typing import Any

from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.prims.shape import convert_element_type_p
from spmd.transforms.typeof import shown_vma, typeof
from spmd.tree_util import keystr, tree_flatten_with_path, tree_leaves, tree_structure


def check_carry(old: Any, new: Any, who: str = "scan", what: str = "carry") -> list:
    """The body's output carry ``new`` has the input carry's structure and types, as JAX
    requires; returns its leaves, a weakly typed output cast to its input's dtype."""
    if tree_structure(old) != tree_structure(new):
        raise SpmdTypeError(
            f"{who} body function {what} input and {what} output must have the same pytree "
            f"structure, but got {tree_structure(old)} and {tree_structure(new)}."
        )
    paths, olds, _ = tree_flatten_with_path(old)
    fixed = []
    for path, before, after in zip(paths, olds, tree_leaves(new), strict=True):
        a_in, a_out = aval_of(before), aval_of(after)
        dtypes_differ = a_in.dtype != a_out.dtype and not (a_in.weak_type or a_out.weak_type)
        if (
            a_in.shape == a_out.shape
            and not dtypes_differ
            and shown_vma(before) == shown_vma(after)
        ):
            if a_out.weak_type and not a_in.weak_type:
                after = convert_element_type_p.bind(after, new_dtype=a_in.dtype)
            fixed.append(after)
            continue
        raise type_error(
            f"{who} body function {what} input and {what} output must have equal types",
            f"the input {keystr(path, what)}",
            before,
            "the output",
            after,
        )
    return fixed


def type_error(what: str, first: str, a: Any, second: str, b: Any) -> SpmdTypeError:
    """``what``, but ``first`` has ``a``'s type and ``second`` ``b``'s (with the pcast that
    fixes differing varying axes)."""
    t_a, t_b = typeof(a), typeof(b)
    fix = ""
    if t_a.vma != t_b.vma:
        order = t_b.mesh_axes or t_a.mesh_axes
        axes = tuple(x for x in order if x in t_a.vma ^ t_b.vma)
        fix = (
            f" The varying manual axes differ: apply spmd.lax.pcast(..., {axes!r}, "
            f"to='varying') to the value that does not vary over them."
        )
    return SpmdTypeError(f"{what}, but {first} has type {t_a} and {second} has type {t_b}.{fix}")


def joined_outputs(outs: list[list], paths: list, who: str, names: list[str]) -> list:
    """The branches' output leaves (``outs[b]``, from finished traces) checked to agree in
    shape, dtype and varying axes: per leaf, the dtype a weakly typed leaf must be cast to
    (where another branch's is strong), else None."""
    first = outs[0]
    targets = []
    for k, path in enumerate(paths):
        avals = [aval_of(o[k]) for o in outs]
        strong = [a for a in avals if not a.weak_type]
        target = strong[0].dtype if strong else avals[0].dtype
        for b, (o, a) in enumerate(zip(outs, avals, strict=True)):
            dtype_ok = a.dtype == target or (a.weak_type and a.dtype.kind == target.kind)
            if a.shape != avals[0].shape or not dtype_ok or shown_vma(o[k]) != shown_vma(first[k]):
                raise type_error(
                    f"{who}: the branch outputs must have identical types",
                    f"{names[0]}'s output {keystr(path, 'out')}",
                    first[k],
                    f"{names[b]}'s",
                    o[k],
                )
        targets.append(target if strong and any(a.weak_type for a in avals) else None)
    return targets
