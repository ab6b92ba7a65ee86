"""What primitive implementations need of an array namespace beyond the array API standard.

A primitive's ``impl(xp, *arrays, **params)`` runs on ``numpy`` itself (fast paths: ufuncs,
``out=``) or on any array-API namespace: ``array_api_compat.torch``, ``array_api_compat.cupy``,
``array_api_strict``. Operands are ``xp``'s arrays or Python scalars (weakly typed); parameters
hold NumPy dtypes, which ``dtype_for`` translates. The generic versions here use only the
standard's functions, or the namespace's own where it has a better one (torch's einsum).
Results follow NumPy 2's dtypes (NEP 50), which the shape rules already computed.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from spmd.errors import SpmdTypeError

# Every dtype spmd holds (spmd/core/aval.py: bool, integer, float and complex).
DTYPES = tuple(
    np.dtype(d)
    for d in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
)
_EXTENDED = tuple(
    dict.fromkeys(np.dtype(d) for d in (np.longdouble, np.clongdouble) if np.dtype(d) not in DTYPES)
)
_PYTHON_SCALARS = (bool, int, float, complex)
_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}  # fmt: skip


def _compat():
    """array_api_compat, or None: it comes with the torch and cupy extras, and neither NumPy
    nor array_api_strict needs it."""
    try:
        import array_api_compat
    except ImportError:
        return None
    return array_api_compat


def _is(kind: str, xp) -> bool:
    """Whether ``xp`` is the namespace of ``kind`` ("numpy", "torch", "cupy"), by
    array_api_compat's ``is_<kind>_namespace``."""
    compat = _compat()
    return compat is not None and getattr(compat, f"is_{kind}_namespace")(xp)


def is_numpy(xp) -> bool:
    """Whether ``xp`` is NumPy (itself, or array-api-compat's wrapper of it)."""
    return xp is np or _is("numpy", xp)


def is_torch(xp) -> bool:
    return _is("torch", xp)


def is_cupy(xp) -> bool:
    return _is("cupy", xp)


@lru_cache(maxsize=64)
def dtypes_held(xp) -> frozenset[np.dtype]:
    """The dtypes of spmd (NumPy dtypes) that ``xp`` computes with as NumPy does.

    NumPy holds all. array_api_strict has no float16 (the standard has none). PyTorch has
    uint16, uint32 and uint64 tensors but no arithmetic, comparison or reduction on them
    ("add_stub not implemented for 'UInt32'"), so they are left out; CuPy holds all of
    NumPy's but the extended-precision ones.
    """
    if is_numpy(xp):
        return frozenset(DTYPES + _EXTENDED)
    held = set()
    for dtype in DTYPES:
        if getattr(xp, dtype.name if dtype != np.bool_ else "bool", None) is not None:
            held.add(dtype)
    if is_torch(xp):
        held -= {np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)}
    return frozenset(held)


@lru_cache(maxsize=256)
def _dtype_for(xp, dtype: np.dtype):
    name = "bool" if dtype == np.bool_ else dtype.name
    found = getattr(xp, name, None)
    if found is None:
        raise SpmdTypeError(
            f"the array namespace {xp.__name__} has no {dtype} arrays, so a device computing "
            f"with it cannot hold this value; cast to a dtype it has (its dtypes: "
            f"{', '.join(sorted(str(d) for d in dtypes_held(xp)))}), or choose another backend "
            f"with SPMD_BACKEND."
        )
    return found


def dtype_for(xp, dtype):
    """``xp``'s dtype for the NumPy dtype ``dtype`` (NumPy: the dtype itself)."""
    dtype = np.dtype(dtype)
    return dtype if xp is np else _dtype_for(xp, dtype)


@lru_cache(maxsize=64)
def _numpy_dtypes(xp) -> dict:
    return {_dtype_for(xp, d): d for d in DTYPES if getattr(xp, "bool", None) is not None
            and getattr(xp, d.name if d != np.bool_ else "bool", None) is not None}  # fmt: skip


def numpy_dtype(xp, x) -> np.dtype:
    """The NumPy dtype of ``x``, an array of ``xp`` or a Python scalar (int: int64)."""
    if isinstance(x, _PYTHON_SCALARS):
        return _SCALAR_DTYPES[type(x)]
    if xp is np or isinstance(x, np.ndarray | np.generic):
        return x.dtype
    return _numpy_dtypes(xp)[x.dtype]


def is_scalar(x) -> bool:
    return isinstance(x, _PYTHON_SCALARS)


def device_of(x):
    """The device an array lives on (None for a Python scalar: the namespace's default)."""
    return None if is_scalar(x) else x.device


def host_view(x) -> np.ndarray:
    """A host array's memory as a NumPy array, without a copy: by DLPack, or by the array
    interface where DLPack refuses (NumPy 2.0 cannot export a read-only array)."""
    try:
        return np.from_dlpack(x)
    except BufferError:
        return np.asarray(x)


def asarray(xp, x, dtype=None, device=None):
    """``x`` (an array of ``xp`` or a Python scalar) as an array of ``xp``, of NumPy dtype
    ``dtype`` if given (a Python int becomes int64, a float float64, as NumPy's); a scalar
    is placed on ``device`` (an operand's, so that the two meet)."""
    if dtype is None:
        dtype = numpy_dtype(xp, x)
    if is_scalar(x):
        if np.dtype(dtype).kind != "c" and isinstance(x, complex):
            x = x.real
        return xp.asarray(x, dtype=dtype_for(xp, dtype), device=device)
    return astype(xp, x, dtype)


def asarrays(xp, dtype, *args) -> list:
    """Each of ``args`` as an array of ``xp`` of NumPy dtype ``dtype``, scalars on the arrays'
    device."""
    device = next((device_of(a) for a in args if not is_scalar(a)), None)
    return [asarray(xp, a, dtype, device) for a in args]


def astype(xp, x, dtype):
    """``x`` (an array of ``xp``) converted to NumPy dtype ``dtype`` as NumPy's astype does:
    a complex number converted to a real dtype keeps its real part."""
    dtype = np.dtype(dtype)
    if xp is np:
        return x.astype(dtype, copy=False)
    if numpy_dtype(xp, x) == dtype:
        return x
    if numpy_dtype(xp, x).kind == "c" and dtype.kind != "c":
        x = xp.real(x)
    return xp.astype(x, _dtype_for(xp, dtype))


_KIND_TYPES = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def scalar_of(dtype: np.dtype, value):
    """``value`` as a Python scalar of ``dtype``'s kind."""
    return _KIND_TYPES[np.dtype(dtype).kind](value)


def operands(xp, args, dtypes):
    """Each operand in the dtype a NumPy loop computes it in: arrays converted, Python scalars
    kept as Python scalars of the loop's kind (weakly typed, they take the array's dtype)."""
    return [
        _KIND_TYPES[d.kind](a) if is_scalar(a) else astype(xp, a, d)
        for a, d in zip(args, dtypes, strict=True)
    ]


def any_true(xp, condition) -> bool:
    """Whether any element of ``condition`` (an array of ``xp`` or a Python bool) is true."""
    return bool(condition) if isinstance(condition, bool) else bool(xp.any(condition))


def size(x) -> int:
    return math.prod(x.shape)


def moveaxis(xp, x, source: int, destination: int):
    if source == destination:
        return x
    order = [d for d in range(x.ndim) if d != source]
    order.insert(destination, source)
    return xp.permute_dims(x, tuple(order))


def flat_diagonal_index(n1: int, n2: int, offset: int) -> list[int]:
    """The positions of the ``offset`` diagonal of an ``n1`` × ``n2`` matrix, flattened."""
    start = max(0, -offset)
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    return [(start + i) * n2 + start + i + offset for i in range(length)]


def diagonal(xp, x, offset: int, axis1: int, axis2: int):
    """NumPy's ``diagonal`` (a copy): the other axes first, the diagonal last."""
    rest = [i for i in range(x.ndim) if i not in (axis1, axis2)]
    n1, n2 = x.shape[axis1], x.shape[axis2]
    x = xp.permute_dims(x, (*rest, axis1, axis2))
    flat = xp.reshape(x, (*x.shape[:-2], n1 * n2))
    index = xp.asarray(flat_diagonal_index(n1, n2, offset), dtype=xp.int64, device=device_of(x))
    return xp.take(flat, index, axis=flat.ndim - 1)


# --- einsum ----------------------------------------------------------------------------------


def einsum_one(xp, subscripts: str, x):
    """A one-operand einsum: diagonals of repeated labels, sums of labels the output drops,
    then the output's order."""
    labels, _, output = subscripts.partition("->")
    while len(set(labels)) != len(labels):  # a repeated label: its diagonal, moved last
        label = next(c for c in labels if labels.count(c) > 1)
        first = labels.index(label)
        second = labels.index(label, first + 1)
        x = diagonal(xp, x, 0, first, second)
        labels = "".join(c for i, c in enumerate(labels) if i not in (first, second)) + label
    summed = tuple(i for i, c in enumerate(labels) if c not in output)
    if summed and numpy_dtype(xp, x) == np.bool_:  # NumPy sums booleans with ``or``
        x = xp.any(x, axis=summed)
        labels = "".join(c for c in labels if c in output)
    elif summed:
        x = xp.sum(x, axis=summed, dtype=x.dtype)
        labels = "".join(c for c in labels if c in output)
    if labels != output:
        x = xp.permute_dims(x, tuple(labels.index(c) for c in output))
    return x


def matmul(xp, x, y):
    """``x @ y`` in their dtype; integers and booleans as a sum of products (GPU matmuls take
    floats only), booleans as NumPy's: ``or`` of ``and``."""
    kind = numpy_dtype(xp, x).kind
    if kind in "fc":
        return xp.matmul(x, y)
    if kind == "b":
        x, y = xp.astype(x, xp.int64), xp.astype(y, xp.int64)
        return matmul(xp, x, y) != 0
    return xp.sum(x[..., :, :, None] * y[..., None, :, :], axis=-2, dtype=x.dtype)


def cumulative(xp, name: str, x, axis: int):
    """cumsum or cumprod of ``x`` along ``axis``, in ``x``'s dtype."""
    standard = getattr(xp, "cumulative_sum" if name == "cumsum" else "cumulative_prod", None)
    if standard is not None:
        return standard(x, axis=axis, dtype=x.dtype)
    return getattr(xp, name)(x, axis=axis, dtype=x.dtype)


# --- ordering --------------------------------------------------------------------------------


def _take_along(xp, x, order, axis: int):
    take_along = getattr(xp, "take_along_axis", None)
    if take_along is not None:
        return take_along(x, order, axis=axis)
    moved, index = moveaxis(xp, x, axis, -1), moveaxis(xp, order, axis, -1)
    n = moved.shape[-1]
    flat = xp.reshape(moved, (-1,))
    rows = xp.arange(size(moved) // n if n else 0, dtype=index.dtype, device=device_of(x))
    base = xp.reshape(rows * n,
                      (*moved.shape[:-1], 1))  # fmt: skip
    out = xp.take(flat, xp.reshape(index + base, (-1,)), axis=0)
    return moveaxis(xp, xp.reshape(out, index.shape), -1, axis)


def take_along_axis(xp, x, indices, axis: int):
    """NumPy's ``take_along_axis``."""
    if xp is np:
        return np.take_along_axis(x, indices, axis)
    return _take_along(xp, x, indices, axis)


def _sortable(xp, x):
    """``x`` in a dtype every namespace sorts (bools as uint8)."""
    return xp.astype(x, xp.uint8) if numpy_dtype(xp, x) == np.bool_ else x


def argsort(xp, x, axis: int):
    """NumPy's stable argsort along ``axis`` (NaN last; complex numbers by real part, then
    imaginary part), as int64."""
    if numpy_dtype(xp, x).kind != "c":
        return xp.astype(xp.argsort(_sortable(xp, x), axis=axis, stable=True), xp.int64)
    order = xp.astype(xp.argsort(xp.imag(x), axis=axis, stable=True), xp.int64)
    real = take_along_axis(xp, xp.real(x), order, axis)
    return take_along_axis(xp, order, xp.argsort(real, axis=axis, stable=True), axis)


def sort(xp, x, axis: int):
    """NumPy's sort along ``axis``."""
    dtype = numpy_dtype(xp, x)
    if dtype.kind == "c":
        return take_along_axis(xp, x, argsort(xp, x, axis), axis)
    out = xp.sort(_sortable(xp, x), axis=axis, stable=True)
    return xp.astype(out, xp.bool) if dtype == np.bool_ else out


def lexicographic_extreme(xp, x, axes, keepdims: bool, largest: bool):
    """The max (or min) of complex ``x`` over ``axes`` in NumPy's order (real part, then
    imaginary part; NaN wins)."""
    moved = xp.permute_dims(x, (*(i for i in range(x.ndim) if i not in axes), *axes))
    rest = moved.shape[: x.ndim - len(axes)]
    flat = xp.reshape(moved, (*rest, -1) if size(moved) else (*rest, 0))
    order = argsort(xp, flat, -1)
    pick = order[..., -1:] if largest else order[..., :1]
    out = take_along_axis(xp, flat, pick, -1)
    nan = xp.isnan(flat)
    any_nan = xp.any(nan, axis=-1, keepdims=True)
    first_nan = take_along_axis(xp, flat, xp.astype(xp.argmax(nan, axis=-1, keepdims=True),
                                                    xp.int64), -1)  # fmt: skip
    out = xp.where(any_nan, first_nan, out)
    out = xp.reshape(out, rest)
    if keepdims:
        out = xp.reshape(out, tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
    return out


# --- scatter ---------------------------------------------------------------------------------


def scatter_add_flat(xp, n: int, positions, updates):
    """A flat array of ``n`` zeros with ``updates`` added at ``positions`` (1-D, same length),
    summed where a position repeats."""
    dtype = numpy_dtype(xp, updates)
    if is_torch(xp):
        out = xp.zeros(n, dtype=updates.dtype, device=updates.device)
        return out.index_put_((positions,), updates, accumulate=True)
    if is_cupy(xp):
        import cupyx

        out = xp.zeros(n, dtype=updates.dtype, device=device_of(updates))
        cupyx.scatter_add(out, positions, updates)
        return out
    # The standard has no scatter: each position sums the updates aimed at it.
    targets = xp.arange(n, dtype=positions.dtype, device=device_of(positions))
    hits = xp.reshape(positions, (1, -1)) == xp.reshape(targets,
                                                        (-1, 1))  # fmt: skip
    if dtype == np.bool_:
        return xp.any(hits & xp.reshape(updates, (1, -1)), axis=1)
    zero = xp.zeros((), dtype=updates.dtype, device=device_of(updates))
    return xp.sum(xp.where(hits, xp.reshape(updates, (1, -1)), zero), axis=1, dtype=updates.dtype)
