"""Matrix decompositions and solves: ``cholesky`` and ``triangular_solve``, batched over
leading dimensions, on float32, float64, complex64 and complex128.

Both act on the last two dimensions and treat every leading dimension as a batch: the
sharding rules let batch dimensions stay split (each device factors or solves its own
matrices, with no communication) and gather the matrix dimensions, which every element of
the result depends on. A right-hand side's columns are independent too and may stay split.

``cholesky`` reads the lower triangle of its operand (the front ends symmetrize it first, as
JAX's do) and gives the lower factor L, ``A = L L^H``; a matrix that is not positive definite
gives NaN in place of its factor, as JAX's does, eagerly and under jit alike.
``triangular_solve`` follows ``jax.lax.linalg.triangular_solve``: it solves
``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``, where ``op`` transposes and/or
conjugates ``a`` and only the triangle ``lower`` names is read (its diagonal taken as ones
with ``unit_diagonal``).
"""

from __future__ import annotations

import numpy as np

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims import namespace
from spmd.prims.contraction import LETTERS, einsum_p
from spmd.prims.derivatives import batch_size, batch_to_front, bind, instantiate
from spmd.sharding.rules import Factors

DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))


# --- shapes ----------------------------------------------------------------------------------


def check_matrices(who: str, argument: str, aval: ShapedArray, *, square: bool = True) -> None:
    """ShapeError unless ``aval`` is a stack of (square) matrices; SpmdTypeError unless its
    dtype is one the decompositions compute in."""
    if aval.ndim < 2 or (square and aval.shape[-1] != aval.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ShapeError(
            f"{who}: {argument} must be a stack of {kind} (..., n, n), with at least two "
            f"dimensions, but it is {aval} of shape {aval.shape}; "
            + (
                "reshape it to have at least two dimensions."
                if aval.ndim < 2
                else "its last two dimensions must have one size."
            )
        )
    if aval.dtype not in DTYPES:
        raise SpmdTypeError(
            f"{who}: {argument} is {aval}, but decompositions compute in float32, float64, "
            f"complex64 or complex128; cast it first (spmd.numpy.linalg casts integers and "
            f"booleans to float64, as NumPy does)."
        )


def _cholesky_shape(x: ShapedArray) -> ShapedArray:
    check_matrices("spmd.lax.linalg.cholesky", "x", x)
    return ShapedArray(x.shape, x.dtype)


def _triangular_solve_shape(a: ShapedArray, b: ShapedArray, *, left_side: bool, **params):
    who = "spmd.lax.linalg.triangular_solve"
    check_matrices(who, "a", a)
    check_matrices(who, "b", b, square=False)
    m = a.shape[-1]
    solved = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[:-2] != b.shape[:-2] or solved != m:
        want = "(..., m, n)" if left_side else "(..., n, m)"
        raise ShapeError(
            f"{who}: with left_side={left_side}, b must be {want} with a's batch dimensions "
            f"{a.shape[:-2]} and m = {m} (a is {a}), but b is {b}; a and b must have the "
            f"same leading dimensions (no broadcasting), and b's "
            f"{'rows' if left_side else 'columns'} must match a's size."
        )
    if a.dtype != b.dtype:
        raise SpmdTypeError(
            f"{who}: a is {a} and b is {b}; they must have one dtype (cast one of them)."
        )
    return ShapedArray(b.shape, b.dtype)


# --- implementations -------------------------------------------------------------------------


def linalg_errors(xp) -> tuple[type[BaseException], ...]:
    """The exception a namespace's factorizations raise on a matrix they cannot factor."""
    errors: tuple[type[BaseException], ...] = (np.linalg.LinAlgError,)
    if namespace.is_torch(xp):
        import torch

        errors += (torch.linalg.LinAlgError,)
    return errors


def _cholesky_impl(xp, x):
    x = namespace.asarray(xp, x)
    factor = np.linalg.cholesky if xp is np else xp.linalg.cholesky
    try:
        return factor(x)
    except linalg_errors(xp):  # some matrix is not positive definite: NaN for it alone
        pass
    n = x.shape[-1]
    flat = xp.reshape(x, (-1, n, n))
    nan = xp.full((n, n), float("nan"), dtype=flat.dtype)
    members = []
    for k in range(flat.shape[0]):
        try:
            members.append(factor(flat[k, ...]))
        except linalg_errors(xp):
            members.append(nan)
    return xp.reshape(xp.stack(members), x.shape)


def _triangle(xp, a, *, lower: bool, unit_diagonal: bool):
    """The triangle of ``a`` that the solve reads, its diagonal ones with ``unit_diagonal``."""
    if unit_diagonal:
        n = a.shape[-1]
        eye = xp.eye(n, dtype=a.dtype) if xp is not np else np.eye(n, dtype=a.dtype)
        return (xp.tril(a, k=-1) if lower else xp.triu(a, k=1)) + eye
    return xp.tril(a) if lower else xp.triu(a)


def _swap(xp, x):
    return xp.swapaxes(x, -1, -2) if xp is np else xp.matrix_transpose(x)


def _substitute(xp, a, b, *, lower: bool):
    """``a⁻¹ b`` by forward (lower) or back substitution: a singular triangle gives inf and
    NaN, as JAX's solve does, where LU would refuse."""
    n = a.shape[-1]
    rows = [None] * n
    for i in range(n) if lower else reversed(range(n)):
        known = range(i) if lower else range(i + 1, n)
        total = b[..., i, :]
        for j in known:
            total = total - a[..., i, j : j + 1] * rows[j]
        rows[i] = total / a[..., i, i : i + 1]
    return xp.stack(rows, axis=-2) if n else b


def _triangular_solve_impl(xp, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = namespace.asarray(xp, a), namespace.asarray(xp, b)
    a = _triangle(xp, a, lower=lower, unit_diagonal=unit_diagonal)
    if conjugate_a and namespace.numpy_dtype(xp, a).kind == "c":
        a = xp.conj(a)
    # x op(a) = b is op(a)ᵀ xᵀ = bᵀ: solve from the left with the other transpose.
    if transpose_a == left_side:
        a, lower = _swap(xp, a), not lower
    if not left_side:
        b = _swap(xp, b)
    solve = np.linalg.solve if xp is np else xp.linalg.solve
    try:
        x = solve(a, b)
    except linalg_errors(xp):  # a zero on the diagonal
        x = _substitute(xp, a, b, lower=lower)
    return x if left_side else _swap(xp, x)


# --- sharding ----------------------------------------------------------------------------------


def _batch_factors(ndim: int) -> tuple[tuple[str, ...], ...]:
    return tuple((f"b{i}",) for i in range(ndim - 2))


def cholesky_sharding(ins, outs) -> Factors:
    """Batch dimensions pass through; the two matrix dimensions are blocked (gathered)."""
    (x,) = ins
    batch = _batch_factors(x.ndim)
    dims = (*batch, ("rows",), ("cols",))
    sizes = dict(zip((d[0] for d in dims), x.shape, strict=True))
    return Factors((dims,), (dims,), sizes, blocked=frozenset({"rows", "cols"}))


def triangular_solve_sharding(ins, outs, *, left_side: bool, **params) -> Factors:
    """Batch dimensions pass through, and so do the right-hand sides (b's columns with
    ``left_side``, its rows without): each is solved on its own. a's matrix dimensions and
    b's solved one are blocked (gathered)."""
    a, b = ins
    batch = _batch_factors(a.ndim)
    matrix = (*batch, ("a_rows",), ("a_cols",))
    solved = (*batch, ("solved",), ("sides",)) if left_side else (*batch, ("sides",), ("solved",))
    sizes = dict(zip((d[0] for d in matrix), a.shape, strict=True))
    sizes |= dict(zip((d[0] for d in solved), b.shape, strict=True))
    blocked = frozenset({"a_rows", "a_cols", "solved"})
    return Factors((matrix, solved), (solved,), sizes, blocked=blocked)


# --- derivatives and batching ------------------------------------------------------------------


def matmul(x, y):
    """``x @ y`` on stacks of matrices with the same leading dimensions, as one einsum."""
    batch = LETTERS[: aval_of(x).ndim - 2]
    i, j, k = LETTERS[-3:]
    return einsum_p.bind(x, y, subscripts=f"{batch}{i}{j},{batch}{j}{k}->{batch}{i}{k}")


def _masked(t, mask: np.ndarray):
    """``t`` times the constant ``mask`` (n, n), broadcast over its leading dimensions."""
    return bind("multiply", t, mask.astype(aval_of(t).dtype))


def _applied(t, *, transpose_a: bool, conjugate_a: bool):
    """``op(t)``: ``t`` transposed (its last two dimensions) and/or conjugated."""
    if conjugate_a and aval_of(t).dtype.kind == "c":
        t = bind("conjugate", t)
    if transpose_a:
        ndim = aval_of(t).ndim
        t = bind("transpose", t, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))
    return t


def _cholesky_jvp(primals, out, tangents):
    """``dL = L Φ(L⁻¹ dA L⁻ᴴ)``, where Φ keeps the strictly lower part and half the diagonal
    (Murray 2016, "Differentiation of the Cholesky decomposition")."""
    (t,), factor = tangents, out
    n = aval_of(factor).shape[-1]
    solve = {"lower": True, "unit_diagonal": False}
    right = triangular_solve_p.bind(
        factor, t, left_side=False, transpose_a=True, conjugate_a=True, **solve
    )  # dA L⁻ᴴ
    inner = triangular_solve_p.bind(
        factor, right, left_side=True, transpose_a=False, conjugate_a=False, **solve
    )  # L⁻¹ dA L⁻ᴴ
    phi = np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)
    return matmul(factor, _masked(inner, phi))


def _triangular_solve_jvp(primals, out, tangents, **params):
    """``x = op(A)⁻¹ b`` gives ``dx = op(A)⁻¹ (db - op(dA) x)`` (from the right:
    ``(db - x op(dA)) op(A)⁻¹``), where dA is the part of A's tangent the solve reads."""
    (a, b), (ta, tb), x = primals, tangents, out
    rhs = instantiate(tb, b)
    if ta is not None:
        n = aval_of(a).shape[-1]
        keep = np.tril(np.ones((n, n)), -1) if params["lower"] else np.triu(np.ones((n, n)), 1)
        if not params["unit_diagonal"]:
            keep = keep + np.eye(n)
        moved = _applied(
            _masked(ta, keep),
            transpose_a=params["transpose_a"],
            conjugate_a=params["conjugate_a"],
        )
        product = matmul(moved, x) if params["left_side"] else matmul(x, moved)
        rhs = bind("subtract", rhs, product)
    return triangular_solve_p.bind(a, rhs, **params)


def _triangular_solve_transpose(ct, a, b, *, transpose_a: bool, **params):
    """Linear in b: the cotangent goes through the transposed solve, ``op(A)⁻ᵀ ct``."""
    if isinstance(a, UndefinedPrimal) or not isinstance(b, UndefinedPrimal):
        raise SpmdTypeError(
            "internal error: triangular_solve is linear in b only, and was transposed in a"
        )
    ct = instantiate(ct, b)
    return [None, triangular_solve_p.bind(a, ct, transpose_a=not transpose_a, **params)]


def _cholesky_batch(args, dims):
    (x,), (d,) = args, dims
    return cholesky_p.bind(batch_to_front(x, d, 0)), 0


def _triangular_solve_batch(args, dims, **params):
    size = batch_size(args, dims)
    a, b = (batch_to_front(v, d, size) for v, d in zip(args, dims, strict=True))
    return triangular_solve_p.bind(a, b, **params), 0


cholesky_p = Primitive(
    "cholesky",
    Rules(
        shape=_cholesky_shape,
        impl=_cholesky_impl,
        sharding=cholesky_sharding,
        calls_blas=True,
        jvp=_cholesky_jvp,
        batch=_cholesky_batch,
    ),
)
triangular_solve_p = Primitive(
    "triangular_solve",
    Rules(
        shape=_triangular_solve_shape,
        impl=_triangular_solve_impl,
        sharding=triangular_solve_sharding,
        calls_blas=True,
        jvp=_triangular_solve_jvp,
        transpose=_triangular_solve_transpose,
        batch=_triangular_solve_batch,
    ),
)
