"""``jacfwd``, ``jacrev``, ``hessian``, ``linearize`` and ``linear_transpose``, as in JAX.

The Jacobians are built as JAX builds them: ``vmap`` over ``jvp`` (one column per basis
vector of the inputs) or over ``vjp``'s pullback (one row per basis vector of the outputs),
then unravelled into the nested pytree ``output tree × input tree`` with one block per pair
of leaves, of shape ``out_leaf.shape + in_leaf.shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.ad import linearize as linearize_program
from spmd.core.ad import transpose, zeros
from spmd.core.program import Literal, Program
from spmd.core.trace import ProgramTrace, aval_of, tracing
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims.derivatives import bind, convert
from spmd.transforms.autodiff import (
    _flat,
    argnums_partial,
    check_input_dtype,
    check_output_dtype,
    jvp,
    undifferentiated,
    vjp,
)
from spmd.transforms.vmap import vmap
from spmd.tree_util import tree_flatten, tree_map, tree_structure, tree_unflatten


def jacfwd(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic=False
) -> Callable:
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, column by column
    (forward mode: one ``jvp`` per input element, vectorized by ``vmap``). With
    ``has_aux``: ``(jacobian, aux)``.

    Example: ``jacfwd(lambda x: x ** 2)(x)`` is ``diag(2 * x)``.
    """

    def jacfun(*args, **kwargs):
        f_partial, dyn_args = argnums_partial(fun, argnums, args, kwargs, "jacfwd")
        tree_map(lambda x: check_input_dtype("jacfwd", holomorphic, x, forward=True), dyn_args)

        def pushfwd(tangents):
            if has_aux:
                y, t, aux = _jvp_with_aux(f_partial, dyn_args, tangents)
                return y, t, aux
            return jvp(f_partial, dyn_args, tangents)

        out_axes = (None, -1, None) if has_aux else (None, -1)
        result = vmap(pushfwd, out_axes=out_axes)(_std_basis(dyn_args))
        y, jac = result[0], result[1]
        if holomorphic:
            tree_map(lambda x: check_output_dtype("jacfwd", True, x, reverse=False), y)
        example = dyn_args[0] if isinstance(argnums, int) else dyn_args
        jac_tree = tree_map(lambda y_leaf, j: _unravel(example, -1, y_leaf, j), y, jac)
        return (jac_tree, result[2]) if has_aux else jac_tree

    return jacfun


def jacrev(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic=False
) -> Callable:
    """The Jacobian of ``fun`` with respect to the arguments ``argnums``, row by row
    (reverse mode: one pullback per output element, vectorized by ``vmap``). With
    ``has_aux``: ``(jacobian, aux)``.

    Example: ``jacrev(lambda x: x.sum() ** 2)(x)`` is ``2 * x.sum() * ones_like(x)``.
    """

    def jacfun(*args, **kwargs):
        f_partial, dyn_args = argnums_partial(fun, argnums, args, kwargs, "jacrev")
        tree_map(lambda x: check_input_dtype("jacrev", holomorphic, x), dyn_args)
        y, pullback, *maybe_aux = vjp(f_partial, *dyn_args, has_aux=has_aux)
        tree_map(lambda x: check_output_dtype("jacrev", holomorphic, x), y)
        jac = vmap(pullback)(_std_basis(y))
        jac = jac[0] if isinstance(argnums, int) else jac
        example = dyn_args[0] if isinstance(argnums, int) else dyn_args
        by_input = tree_map(lambda x_leaf, j: _unravel(y, 0, x_leaf, j), example, jac)
        jac_tree = _tree_transpose(tree_structure(example), tree_structure(y), by_input)
        return (jac_tree, *maybe_aux) if has_aux else jac_tree

    return jacfun


jacobian = jacrev


def hessian(
    fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False, holomorphic=False
) -> Callable:
    """The Hessian of ``fun`` (forward over reverse: ``jacfwd(jacrev(fun))``), its blocks
    nested as ``output tree × input tree × input tree``.

    Example: ``hessian(lambda x: (x ** 3).sum())(x)`` is ``diag(6 * x)``.
    """
    inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
    return jacfwd(inner, argnums, has_aux=has_aux, holomorphic=holomorphic)


def linearize(fun: Callable, *primals: Any, has_aux: bool = False):
    """``fun(*primals)`` and ``f_jvp``, its derivative at ``primals`` as a function of the
    tangents (one per primal, shaped like it): ``f_jvp(*tangents)`` is ``jvp``'s tangent out,
    computed from the saved residuals without running ``fun`` again. With ``has_aux``:
    ``(out, f_jvp, aux)``.

    Example: ``y, f_jvp = linearize(spmd.numpy.sin, x); f_jvp(t)`` is ``cos(x) * t``.
    """
    leaves, in_tree = tree_flatten(primals)
    store: dict = {}
    linear_in = [np.issubdtype(aval_of(x).dtype, np.inexact) for x in leaves]
    outs, program, has_tangent = linearize_program(
        _flat(fun, in_tree, has_aux, store), leaves, linear_in
    )
    out_tree = store["tree"]

    def f_jvp(*tangents: Any) -> Any:
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise ShapeError(
                f"linearize: f_jvp takes one tangent per primal, structured like the primals "
                f"{in_tree}, but got {t_tree}."
            )
        for i, (t, x) in enumerate(zip(t_leaves, leaves, strict=True)):
            if aval_of(t).shape != aval_of(x).shape:
                raise ShapeError(
                    f"linearize: tangent leaf {i} has shape {aval_of(t).shape} but its primal "
                    f"has shape {aval_of(x).shape}; pass tangents shaped like the primals."
                )
        wanted = [t for t, lin in zip(t_leaves, linear_in, strict=True) if lin]
        found = iter(_bind_program(program, program.consts, wanted))
        out_tangents = [
            next(found) if has else zeros(aval_of(o).strong())
            for o, has in zip(outs, has_tangent, strict=True)
        ]
        return tree_unflatten(out_tree, out_tangents)

    out = tree_unflatten(out_tree, outs)
    return (out, f_jvp, store["aux"]) if has_aux else (out, f_jvp)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: tuple = ()) -> Callable:
    """The transpose of the linear function ``fun``: ``primals`` (arrays or
    ShapeDtypeStructs) give its inputs' shapes and dtypes only. The returned function maps a
    cotangent of ``fun``'s output to the tuple of its inputs' cotangents.

    Example: ``linear_transpose(lambda x: 2 * x, x)(ct)`` is ``(2 * ct,)``.
    """
    del reduce_axes  # JAX's deprecated argument, accepted and unused
    leaves, in_tree = tree_flatten(primals)
    avals = [aval_of(x).strong() for x in leaves]
    for i, aval in enumerate(avals):
        if not np.issubdtype(aval.dtype, np.inexact):
            raise SpmdTypeError(
                f"linear_transpose: input leaf {i} is {aval}, but a linear function's inputs "
                f"must be float or complex; pass float (or complex) primals."
            )
    trace = ProgramTrace()
    tracers = [trace.new_arg(aval) for aval in avals]
    store: dict = {}
    with tracing(trace):
        out_leaves = _flat(fun, in_tree, False, store)(*tracers)
    program = trace.finish([t.node for t in tracers], out_leaves)
    out_tree = store["tree"]

    def transposed_fun(out_cotangent: Any) -> tuple:
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree:
            raise ShapeError(
                f"linear_transpose: the cotangent's structure {ct_tree} must match the "
                f"output's {out_tree}."
            )
        for i, (ct, aval) in enumerate(zip(ct_leaves, program.out_avals, strict=True)):
            got = aval_of(ct)
            if got.shape != aval.shape or got.dtype != aval.dtype:
                raise SpmdTypeError(
                    f"linear_transpose: cotangent leaf {i} is {got}, but the output it "
                    f"stands for is {aval}; pass a cotangent of the output's shape and dtype."
                )
        cts = transpose(program, program.consts, ct_leaves)
        cts = [
            zeros(aval) if ct is None else convert(ct, aval.dtype)
            for ct, aval in zip(cts, avals, strict=True)
        ]
        return tree_unflatten(in_tree, cts)

    return transposed_fun


# --- helpers ------------------------------------------------------------------------------


def _jvp_with_aux(fun: Callable, primals: tuple, tangents: tuple):
    """``jvp`` of a function returning ``(output, aux)``: ``(out, tangent_out, aux)``."""
    store: dict = {}

    def without_aux(*args):
        out, store["aux"] = _split_aux(fun(*args))
        return out

    y, t = jvp(without_aux, primals, tangents)
    return y, t, undifferentiated(store["aux"])


def _split_aux(out: Any) -> tuple:
    if not (isinstance(out, tuple) and len(out) == 2):
        raise SpmdTypeError(
            f"has_aux=True needs the function to return a pair (output, aux), got "
            f"{type(out).__name__}."
        )
    return out


def _std_basis(tree: Any) -> Any:
    """The standard basis of the space of ``tree``'s leaves: per leaf, an array of shape
    ``(total size, *leaf.shape)`` whose rows are the unit vectors (NumPy constants)."""
    leaves, treedef = tree_flatten(tree)
    avals = [aval_of(x) for x in leaves]
    total = sum(a.size for a in avals)
    dtype = np.result_type(*[a.dtype for a in avals]) if avals else np.float64
    eye = np.eye(total, dtype=dtype)
    parts, start = [], 0
    for aval in avals:
        block = eye[:, start : start + aval.size].reshape((total, *aval.shape))
        parts.append(block.astype(aval.dtype))
        start += aval.size
    return tree_unflatten(treedef, parts)


def _unravel(tree: Any, axis: int, example: Any, arr: Any) -> Any:
    """``arr``'s axis ``axis`` (0 or -1), which runs over all elements of ``tree``'s leaves,
    split into one block per leaf, reshaped to put that leaf's shape there, in ``example``'s
    dtype (a complex block of a real ``example`` keeps its real part)."""
    leaves, treedef = tree_flatten(tree)
    shape = aval_of(arr).shape
    axis = axis % len(shape)
    sizes = [aval_of(x).size for x in leaves]
    bounds, start = [], 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    parts = bind("split", arr, axis=axis, bounds=tuple(bounds)) if len(leaves) > 1 else [arr]
    dtype = aval_of(example).dtype
    blocks = []
    for part, leaf in zip(parts, leaves, strict=True):
        new_shape = (*shape[:axis], *aval_of(leaf).shape, *shape[axis + 1 :])
        if aval_of(part).shape != new_shape:
            part = bind("reshape", part, new_sizes=new_shape)
        if aval_of(part).dtype.kind == "c" and dtype.kind != "c":
            part = bind("real", part)
        blocks.append(convert(part, dtype))
    return tree_unflatten(treedef, blocks)


def _tree_transpose(outer, inner, tree: Any) -> Any:
    """``tree`` (an ``outer`` tree of ``inner`` trees) as an ``inner`` tree of ``outer`` trees."""
    rows = [inner.flatten_up_to(sub) for sub in outer.flatten_up_to(tree)]
    columns = [[row[j] for row in rows] for j in range(inner.num_leaves)]
    return tree_unflatten(inner, [tree_unflatten(outer, col) for col in columns])


def _bind_program(program: Program, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """``program`` applied to ``args``, each equation bound in the current trace (so that
    the result can itself be traced, differentiated or vectorized)."""
    env = dict(zip(program.constvars, consts, strict=True))
    env.update(zip(program.invars, args, strict=True))

    def read(atom):
        return atom.value if isinstance(atom, Literal) else env[atom]

    for eqn in program.equations:
        out = eqn.primitive.bind(*map(read, eqn.inputs), **eqn.params)
        outs = out if eqn.primitive.multiple_results else [out]
        env.update(zip(eqn.outputs, outs, strict=True))
    return [read(v) for v in program.outvars]
