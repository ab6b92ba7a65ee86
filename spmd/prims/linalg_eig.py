"""LAPACK's general (non-Hermitian) decompositions as primitives, batched over leading
dimensions: ``eig`` (eigenvalues and left/right eigenvectors, geev), ``schur`` (gees) and
``hessenberg`` (gehrd's packed reflectors and their scalars), as ``jax.lax.linalg`` has them.

Sharding is that of the other decompositions (``batch_sharding``): batch dimensions stay split
with no communication, each matrix is gathered on its device. NumPy computes eig over the
whole stack at once, and SciPy's LAPACK wrappers schur and hessenberg matrix by matrix. Another
namespace uses its own ``linalg.eig`` where it has one; otherwise (left eigenvectors, schur,
hessenberg) its arrays go to NumPy on the host and back, and a namespace whose arrays cannot
(no DLPack export to the host) gets an SpmdTypeError naming it.

A matrix holding inf or NaN, or one LAPACK fails on, gives NaN in place of its results, as
JAX's do. eig's derivative is in spmd/prims/linalg_eig_jvp.py; schur and hessenberg have none,
as in JAX, and differentiating them raises SpmdTypeError saying what to do instead.
"""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import SpmdTypeError
from spmd.prims import namespace
from spmd.prims.derivatives import batch_size, batch_to_front
from spmd.prims.linalg import check_matrices
from spmd.prims.linalg_eig_jvp import eig_jvp
from spmd.prims.linalg_lapack import batch_sharding


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype of ``dtype``'s precision: complex64 for float32 and complex64."""
    single = np.dtype(dtype) in (np.float32, np.complex64)
    return np.dtype(np.complex64 if single else np.complex128)


# --- shapes ----------------------------------------------------------------------------------


def _eig_shape(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
    check_matrices("spmd.lax.linalg.eig", "x", x)
    dtype = complex_dtype(x.dtype)
    vectors = ShapedArray(x.shape, dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return (ShapedArray(x.shape[:-1], dtype),) + (vectors,) * count


def _schur_shape(x, *, compute_schur_vectors):
    check_matrices("spmd.lax.linalg.schur", "x", x)
    form = ShapedArray(x.shape, x.dtype)
    return (form, form) if compute_schur_vectors else (form,)


def _hessenberg_shape(x):
    check_matrices("spmd.lax.linalg.hessenberg", "a", x)
    *batch, n = x.shape[:-1]
    return ShapedArray(x.shape, x.dtype), ShapedArray((*batch, max(n - 1, 0)), x.dtype)


# --- the host (NumPy and SciPy) ----------------------------------------------------------------


def _finite(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``x`` with its matrices that hold inf or NaN zeroed (LAPACK must not see them), and
    the mask (..., 1, 1) of the finite ones, or None when all are."""
    ok = np.isfinite(x).all(axis=(-2, -1), keepdims=True)
    if ok.all():
        return x, None
    return np.where(ok, x, 0), ok


def _nan_where_not(ok: np.ndarray | None, results, ndim: int):
    """Each result with NaN for the matrices ``ok`` says held inf or NaN."""
    if ok is None:
        return list(results)
    kept = []
    for r in results:
        mask = ok if r.ndim == ndim else ok[..., 0]
        kept.append(np.where(mask, r, np.nan).astype(r.dtype))
    return kept


def _each_matrix(routine, x: np.ndarray, outs) -> list[np.ndarray]:
    """``routine`` on each matrix of the stack ``x`` (it returns one array per entry of
    ``outs``, a (trailing shape, dtype) pair); NaN for a matrix LAPACK fails on."""
    batch = x.shape[:-2]
    results = [np.empty(batch + tuple(shape), dtype) for shape, dtype in outs]
    for index in np.ndindex(*batch):
        try:
            parts = routine(x[index])
        except (np.linalg.LinAlgError, ValueError):
            parts = [np.nan] * len(outs)
        for result, part in zip(results, parts, strict=True):
            result[index] = part
    return results


def _eig_host(x: np.ndarray, *, left: bool, right: bool) -> list[np.ndarray]:
    import scipy.linalg

    n, dtype = x.shape[-1], complex_dtype(x.dtype)
    outs = [((n,), dtype)] + [((n, n), dtype)] * (int(left) + int(right))
    if left:  # NumPy has no left eigenvectors: SciPy's geev, matrix by matrix

        def routine(m):
            w, *vectors = scipy.linalg.eig(m, left=True, right=right, check_finite=False)
            return [w, *vectors]

        return _each_matrix(routine, x, outs)
    routine = np.linalg.eig if right else np.linalg.eigvals
    try:
        found = routine(x)
    except np.linalg.LinAlgError:  # some matrix did not converge: NaN for it alone
        return _each_matrix(lambda m: list(_as_tuple(routine(m))), x, outs)
    return [np.asarray(r, dtype) for r in _as_tuple(found)]


def _as_tuple(found) -> tuple:
    return tuple(found) if isinstance(found, tuple) else (found,)


def _schur_host(x: np.ndarray, *, compute_schur_vectors: bool) -> list[np.ndarray]:
    import scipy.linalg

    output = "complex" if x.dtype.kind == "c" else "real"
    routine = lambda m: scipy.linalg.schur(m, output=output, check_finite=False)  # noqa: E731
    form = (x.shape[-2:], x.dtype)
    results = _each_matrix(routine, x, [form, form])
    return results if compute_schur_vectors else results[:1]


def _hessenberg_host(x: np.ndarray) -> list[np.ndarray]:
    from scipy.linalg import lapack

    n = x.shape[-1]

    def routine(m):
        if n == 0:
            return m, np.zeros(0, m.dtype)
        gehrd = lapack.get_lapack_funcs("gehrd", (m,))
        packed, taus, info = gehrd(m, lo=0, hi=n - 1)
        if info != 0:
            raise np.linalg.LinAlgError(f"gehrd failed with info={info}")
        return packed, taus

    return _each_matrix(routine, x, [((n, n), x.dtype), ((max(n - 1, 0),), x.dtype)])


def _on_host(host_routine, who: str):
    """An impl running ``host_routine(numpy_array, **params)`` (a list of NumPy arrays) for
    any namespace: another namespace's array goes to NumPy and the results come back to
    its device. Matrices with inf or NaN give NaN."""

    def impl(xp, x, **params):
        host = _to_host(xp, x, who)
        finite, ok = _finite(host)
        results = _nan_where_not(ok, host_routine(finite, **params), host.ndim)
        if namespace.is_numpy(xp):
            return tuple(results)
        return tuple(xp.asarray(r, device=x.device) for r in results)

    return impl


def _to_host(xp, x, who: str) -> np.ndarray:
    if namespace.is_numpy(xp):
        return np.asarray(x)
    if namespace.is_torch(xp):
        return x.detach().cpu().resolve_conj().numpy()
    if namespace.is_cupy(xp):
        return x.get()
    try:
        return np.asarray(np.from_dlpack(x))
    except (AttributeError, BufferError, RuntimeError, TypeError, ValueError) as error:
        raise SpmdTypeError(
            f"{who}: the array namespace {xp.__name__} has no such decomposition, and its "
            f"arrays cannot be brought to NumPy on the host to compute it there ({error}); "
            f"choose another backend with SPMD_BACKEND (numpy has it)."
        ) from error


# --- implementations -------------------------------------------------------------------------


_eig_on_host = _on_host(
    lambda x, *, left, right: _eig_host(x, left=left, right=right), "spmd.lax.linalg.eig"
)


def _eig_impl(
    xp, x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs
):
    left, right = bool(compute_left_eigenvectors), bool(compute_right_eigenvectors)
    own = getattr(getattr(xp, "linalg", None), "eig", None)
    if namespace.is_numpy(xp) or left or own is None:
        return _eig_on_host(xp, x, left=left, right=right)
    return _eig_namespace(xp, namespace.asarray(xp, x), right=right)


def _eig_namespace(xp, x, *, right: bool):
    """The namespace's own ``linalg.eig`` (or ``eigvals``), matrices with inf or NaN as NaN."""
    ok = xp.all(xp.isfinite(x), axis=(-2, -1), keepdims=True)
    x = xp.where(ok, x, xp.zeros_like(x))
    lib = xp.linalg
    dtype = namespace.dtype_for(xp, complex_dtype(namespace.numpy_dtype(xp, x)))
    if right or not hasattr(lib, "eigvals"):
        w, v = lib.eig(x)
        results = (w, v) if right else (w,)
    else:
        results = (lib.eigvals(x),)
    nan = float("nan")
    out = []
    for r in results:
        r = xp.astype(r, dtype)
        mask = ok if r.ndim == x.ndim else ok[..., 0]
        out.append(xp.where(mask, r, xp.full_like(r, nan)))
    return tuple(out)


_schur_impl = _on_host(_schur_host, "spmd.lax.linalg.schur")
_hessenberg_impl = _on_host(_hessenberg_host, "spmd.lax.linalg.hessenberg")


# --- derivatives and batching --------------------------------------------------------------------


def _no_derivative(name: str, instead: str):
    def jvp(primals, out, tangents, **params):
        raise SpmdTypeError(
            f"spmd.lax.linalg.{name} has no derivative, as jax.lax.linalg.{name} has none; "
            f"stop the gradient before it (spmd.lax.stop_gradient), or {instead}."
        )

    return jvp


def _batch(primitive_of):
    def rule(args, dims, **params):
        size = batch_size(args, dims)
        moved = [batch_to_front(a, d, size) for a, d in zip(args, dims, strict=True)]
        out = primitive_of().bind(*moved, **params)
        return out, [0] * len(out)

    return rule


def _primitive(name, shape, impl, jvp):
    rules = Rules(
        shape=shape,
        impl=impl,
        sharding=batch_sharding,
        calls_blas=True,
        jvp=jvp,
        batch=_batch(lambda: _PRIMITIVES[name]),
    )
    return Primitive(name, rules, multiple_results=True)


_PRIMITIVES: dict[str, Primitive] = {}
eig_p = _primitive("eig", _eig_shape, _eig_impl, eig_jvp)
schur_p = _primitive(
    "schur",
    _schur_shape,
    _schur_impl,
    _no_derivative("schur", "differentiate the eigenvalues with spmd.numpy.linalg.eigvals"),
)
hessenberg_p = _primitive(
    "hessenberg",
    _hessenberg_shape,
    _hessenberg_impl,
    _no_derivative("hessenberg", "compute what you need from a decomposition that has one"),
)
_PRIMITIVES.update({p.name: p for p in (eig_p, schur_p, hessenberg_p)})
