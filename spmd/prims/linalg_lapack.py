"""LAPACK's dense decompositions as primitives, each batched over leading dimensions and
computed by the backend's own ``linalg`` routine on each device: ``solve``, ``inv``, ``det``,
``slogdet``, ``eigh``, ``qr`` and ``svd`` (spmd/prims/linalg.py has cholesky and
triangular_solve).

Every operand's leading dimensions are a batch: the sharding rules let them stay split (each
device decomposes its own matrices, with no communication) and gather the matrix
dimensions, on which every element of every result depends. The operands of one primitive
share their batch dimensions (the front ends in spmd.numpy.linalg broadcast them).

A singular matrix gives inf or NaN from ``inv`` and ``solve`` (for that matrix alone), as
JAX's do under jit, where NumPy raises. Every one has a jvp rule (svd's and qr's are in
spmd/prims/linalg_lapack_jvp.py), and ``solve`` a transpose rule in its right-hand side.
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
from spmd.prims.derivatives import batch_size, batch_to_front, bind, convert, instantiate
from spmd.prims.linalg import check_matrices, linalg_errors, matmul
from spmd.prims.linalg_lapack_jvp import qr_jvp, svd_jvp
from spmd.sharding.rules import Factors


def _real(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype in (np.float32, np.complex64) else np.float64)


def _lib(xp):
    return np.linalg if xp is np else xp.linalg


# --- shapes ----------------------------------------------------------------------------------


def _square(name: str, x: ShapedArray) -> tuple[tuple[int, ...], int]:
    check_matrices(f"spmd.numpy.linalg.{name}", "x", x)
    return x.shape[:-2], x.shape[-1]


def _inv_shape(x):
    _square("inv", x)
    return ShapedArray(x.shape, x.dtype)


def _solve_shape(a, b):
    who = "spmd.numpy.linalg.solve"
    check_matrices(who, "x1", a)
    check_matrices(who, "x2", b, square=False)
    if a.shape[:-2] != b.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise ShapeError(
            f"{who}: x2 must be (..., n, k) with x1's batch dimensions {a.shape[:-2]} and "
            f"n = {a.shape[-1]} (x1 is {a}), but it is {b}; broadcast them first."
        )
    if a.dtype != b.dtype:
        raise SpmdTypeError(f"{who}: x1 is {a} and x2 is {b}; cast them to one dtype.")
    return ShapedArray(b.shape, b.dtype)


def _det_shape(x):
    batch, _ = _square("det", x)
    return ShapedArray(batch, x.dtype)


def _slogdet_shape(x):
    batch, _ = _square("slogdet", x)
    return (ShapedArray(batch, x.dtype), ShapedArray(batch, _real(x.dtype)))


def _eigh_shape(x, *, lower: bool):
    batch, n = _square("eigh", x)
    return (ShapedArray((*batch, n), _real(x.dtype)), ShapedArray(x.shape, x.dtype))


def _qr_shape(x, *, mode: str):
    check_matrices("spmd.numpy.linalg.qr", "x", x, square=False)
    *batch, m, n = x.shape
    k = m if mode == "complete" else min(m, n)
    return (ShapedArray((*batch, m, k), x.dtype), ShapedArray((*batch, k, n), x.dtype))


def _svd_shape(x, *, full_matrices: bool):
    check_matrices("spmd.numpy.linalg.svd", "x", x, square=False)
    *batch, m, n = x.shape
    k = min(m, n)
    rows, cols = (m, n) if full_matrices else (k, k)
    return (
        ShapedArray((*batch, m, rows), x.dtype),
        ShapedArray((*batch, k), _real(x.dtype)),
        ShapedArray((*batch, cols, n), x.dtype),
    )


# --- implementations -------------------------------------------------------------------------


def _each_matrix(xp, routine, x, *rest):
    """``routine`` on every matrix of the stack at once, or, where one is singular, on each
    alone, NaN for the singular ones."""
    try:
        return routine(x, *rest)
    except linalg_errors(xp):
        pass
    n = x.shape[-1]
    flat = xp.reshape(x, (-1, n, n))
    others = [xp.reshape(r, (-1, *r.shape[-2:])) for r in rest]
    members = []
    for k in range(flat.shape[0]):
        parts = [o[k, ...] for o in others]
        try:
            members.append(routine(flat[k, ...], *parts))
        except linalg_errors(xp):
            like = parts[0] if parts else flat[k, ...]
            members.append(xp.full(like.shape, float("nan"), dtype=like.dtype))
    shape = rest[0].shape if rest else x.shape
    return xp.reshape(xp.stack(members), shape)


def _inv_impl(xp, x):
    return _each_matrix(xp, _lib(xp).inv, namespace.asarray(xp, x))


def _solve_impl(xp, a, b):
    a, b = namespace.asarray(xp, a), namespace.asarray(xp, b)
    return _each_matrix(xp, _lib(xp).solve, a, b)


def _det_impl(xp, x):
    return _lib(xp).det(namespace.asarray(xp, x))


def _slogdet_impl(xp, x):
    sign, logabsdet = _lib(xp).slogdet(namespace.asarray(xp, x))
    return sign, logabsdet


def _eigh_impl(xp, x, *, lower):
    x = namespace.asarray(xp, x)
    if xp is np:
        return tuple(np.linalg.eigh(x, UPLO="L" if lower else "U"))
    # The Array API's eigh has no UPLO: give it the Hermitian matrix the triangle stands for.
    triangle = xp.tril(x, k=-1) if lower else xp.triu(x, k=1)
    mirrored = xp.matrix_transpose(triangle)
    if namespace.numpy_dtype(xp, x).kind == "c":
        mirrored = xp.conj(mirrored)
    diagonal = xp.tril(x) - xp.tril(x, k=-1)
    if namespace.numpy_dtype(xp, x).kind == "c":  # LAPACK reads the diagonal's real part
        diagonal = (diagonal + xp.conj(diagonal)) / 2
    w, v = xp.linalg.eigh(triangle + mirrored + diagonal)
    return w, v


def _qr_impl(xp, x, *, mode):
    q, r = _lib(xp).qr(namespace.asarray(xp, x), mode=mode)
    return q, r


def _svd_impl(xp, x, *, full_matrices):
    u, s, vh = _lib(xp).svd(namespace.asarray(xp, x), full_matrices=full_matrices)
    return u, s, vh


# --- sharding ----------------------------------------------------------------------------------


def batch_sharding(ins, outs, **params) -> Factors:
    """Leading (batch) dimensions pass through, shared by every operand and result; each
    matrix dimension is blocked (gathered): every element of a decomposition depends on the
    whole matrix."""
    batch = len(ins[0].shape) - 2
    sizes: dict[str, int] = {}
    blocked: set[str] = set()

    def dims(aval, tag):
        named = []
        for axis, size in enumerate(aval.shape):
            name = f"b{axis}" if axis < batch else f"{tag}{axis}"
            sizes[name] = size
            if axis >= batch:
                blocked.add(name)
            named.append((name,))
        return tuple(named)

    operands = tuple(dims(a, f"in{k}_") for k, a in enumerate(ins))
    results = tuple(dims(a, f"out{k}_") for k, a in enumerate(outs))
    return Factors(operands, results, sizes, blocked=frozenset(blocked))


# --- derivatives -------------------------------------------------------------------------------


def _contract(spec: str, *operands, batch: int):
    """``einsum(spec)``, its ``...`` spelled as ``batch`` leading letters and ``i``, ``j``,
    ``k`` as letters that cannot clash with them."""
    i, j, k = LETTERS[-3:]
    spec = spec.replace("i", i).replace("j", j).replace("k", k)
    return einsum_p.bind(*operands, subscripts=spec.replace("...", LETTERS[:batch]))


def _inv_jvp(primals, out, tangents):
    (t,) = tangents
    return bind("negative", matmul(matmul(out, t), out))


def _solve_jvp(primals, out, tangents):
    (a, b), (ta, tb) = primals, tangents
    rhs = instantiate(tb, b)
    if ta is not None:
        rhs = bind("subtract", rhs, matmul(ta, out))
    return solve_p.bind(a, rhs)


def _solve_transpose(ct, a, b):
    """Linear in b: ``x = A⁻¹ b`` sends its cotangent back as ``A⁻ᵀ ct``."""
    if isinstance(a, UndefinedPrimal) or not isinstance(b, UndefinedPrimal):
        raise SpmdTypeError("internal error: solve is linear in b only, and was transposed in a")
    ndim = aval_of(a).ndim
    transposed = bind("transpose", a, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))
    return [None, solve_p.bind(transposed, instantiate(ct, b))]


def _trace_of_inverse_times(a, t):
    """``trace(a⁻¹ t)`` per matrix."""
    return _contract("...ij,...ji->...", inv_p.bind(a), t, batch=aval_of(a).ndim - 2)


def _det_jvp(primals, out, tangents):
    ((a,), (t,)) = primals, tangents
    return bind("multiply", out, _trace_of_inverse_times(a, t))


def _slogdet_jvp(primals, out, tangents):
    (a,), (t,), (sign, _) = primals, tangents, out
    traced = _trace_of_inverse_times(a, t)
    if aval_of(a).dtype.kind != "c":
        return [None, traced]
    real = bind("real", traced)
    imaginary = bind("subtract", traced, convert(real, aval_of(traced).dtype))
    return [bind("multiply", sign, imaginary), real]


def _triangle_read(t, *, lower: bool):
    """The Hermitian matrix eigh sees in a tangent: its ``lower`` (upper) triangle mirrored."""
    n = aval_of(t).shape[-1]
    strict = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    dtype = aval_of(t).dtype
    kept = bind("multiply", t, (strict + np.eye(n)).astype(dtype))
    mirrored = bind("multiply", t, strict.astype(dtype))
    ndim = aval_of(t).ndim
    mirrored = bind("transpose", mirrored, permutation=(*range(ndim - 2), ndim - 1, ndim - 2))
    if dtype.kind == "c":
        mirrored = bind("conjugate", mirrored)
    return bind("add", kept, mirrored)


def _eigh_jvp(primals, out, tangents, *, lower):
    """``A = V diag(w) Vᴴ``: with ``T = Vᴴ dA V``, ``dw = real(diag T)`` and
    ``dV = V (F ∘ T)``, ``F_ij = 1 / (w_j - w_i)`` off the diagonal and 0 on it."""
    (t,), (w, v) = tangents, out
    dtype, real = aval_of(v).dtype, aval_of(w).dtype
    batch = aval_of(w).ndim - 1
    adjoint_v = bind("conjugate", v) if dtype.kind == "c" else v
    moved = matmul(_triangle_read(t, lower=lower), v)
    rotated = _contract("...ki,...kj->...ij", adjoint_v, moved, batch=batch)
    n = aval_of(w).shape[-1]
    ones = np.ones(n, dtype=real)
    columns = _contract("...j,i->...ij", w, ones, batch=batch)
    rows = _contract("...i,j->...ij", w, ones, batch=batch)
    gaps = bind("add", bind("subtract", columns, rows), np.where(np.eye(n), np.inf, 0).astype(real))
    f = bind("true_divide", np.ones((n, n), real), gaps)
    diagonal = _contract("...ij,ij->...j", rotated, np.eye(n, dtype=dtype), batch=batch)
    dw = bind("real", diagonal) if dtype.kind == "c" else diagonal
    dv = matmul(v, bind("multiply", convert(f, dtype), rotated))
    return [dw, dv]


# --- batching ----------------------------------------------------------------------------------


def _batch(primitive_name):
    def rule(args, dims, **params):
        size = batch_size(args, dims)
        moved = [batch_to_front(a, d, size) for a, d in zip(args, dims, strict=True)]
        out = _PRIMITIVES[primitive_name].bind(*moved, **params)
        if _PRIMITIVES[primitive_name].multiple_results:
            return out, [0] * len(out)
        return out, 0

    return rule


def _primitive(name, shape, impl, jvp=None, multiple=False, transpose=None):
    rules = Rules(
        transpose=transpose,
        shape=shape,
        impl=impl,
        sharding=batch_sharding,
        calls_blas=True,
        jvp=jvp,
        batch=_batch(name),
    )
    return Primitive(name, rules, multiple_results=multiple)


_PRIMITIVES: dict[str, Primitive] = {}
inv_p = _primitive("inv", _inv_shape, _inv_impl, _inv_jvp)
solve_p = _primitive("solve", _solve_shape, _solve_impl, _solve_jvp, transpose=_solve_transpose)
det_p = _primitive("det", _det_shape, _det_impl, _det_jvp)
slogdet_p = _primitive("slogdet", _slogdet_shape, _slogdet_impl, _slogdet_jvp, multiple=True)
eigh_p = _primitive("eigh", _eigh_shape, _eigh_impl, _eigh_jvp, multiple=True)
qr_p = _primitive("qr", _qr_shape, _qr_impl, qr_jvp, multiple=True)
svd_p = _primitive("svd", _svd_shape, _svd_impl, svd_jvp, multiple=True)
_PRIMITIVES.update({p.name: p for p in (inv_p, solve_p, det_p, slogdet_p, eigh_p, qr_p, svd_p)})
