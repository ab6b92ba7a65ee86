"""Elementwise primitives that jax.lax has and no spmd.numpy function computes: cbrt,
nextafter, and complex (a complex number from its two parts).

Each broadcasts as NumPy does; its dtype is NumPy's ufunc's (cbrt, nextafter) or the complex
dtype of its float parts (complex). NumPy computes them exactly (np.cbrt, np.nextafter, the
parts written into a complex buffer); other array namespaces use the standard's functions.
"""

from __future__ import annotations

import numpy as np

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.prims import namespace as ns
from spmd.prims import ufuncs
from spmd.prims.derivatives import (
    bind,
    convert,
    elementwise_batch,
    instantiate,
    sum_to_shape,
    unary_batch,
)
from spmd.prims.elementwise import _ufunc_dtype, broadcast_shape, broadcasting

# --- cbrt ------------------------------------------------------------------------------------


def _cbrt_shape(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, _ufunc_dtype("cbrt", np.cbrt, (x,)))


def _cbrt_impl(xp, x, out=None):
    if xp is np:
        return np.cbrt(x) if out is None else np.cbrt(x, out=out)
    dtype = ufuncs.loop_dtypes(np.cbrt, (ufuncs.result_dtype(xp, x),))[-1]
    x = ns.asarray(xp, x, dtype)
    root = xp.sign(x) * xp.abs(x) ** (1 / 3)
    # one Newton step toward the real root, skipped at 0 and infinity where it is exact
    exact = (x == 0) | xp.isinf(x) | xp.isnan(x)
    safe = xp.where(exact, xp.ones_like(root), root)
    return xp.where(exact, root, safe - (safe * safe * safe - x) / (3 * safe * safe))


def _cbrt_jvp(primals, out, tangents):
    """``t / (3 cbrt(x)**2)``: infinite at 0, as JAX's."""
    return bind("true_divide", tangents[0], bind("multiply", 3, bind("multiply", out, out)))


cbrt_p = Primitive(
    "cbrt",
    Rules(
        shape=_cbrt_shape,
        impl=_cbrt_impl,
        sharding=broadcasting(),
        writes_into=True,
        jvp=_cbrt_jvp,
        batch=unary_batch("cbrt"),
    ),
)

# --- nextafter -------------------------------------------------------------------------------


def _nextafter_shape(x1: ShapedArray, x2: ShapedArray) -> ShapedArray:
    return ShapedArray(
        broadcast_shape("nextafter", (x1, x2)), _ufunc_dtype("nextafter", np.nextafter, (x1, x2))
    )


def _nextafter_impl(xp, x1, x2, out=None):
    if xp is np:
        return np.nextafter(x1, x2) if out is None else np.nextafter(x1, x2, out=out)
    dtype = ufuncs.loop_dtypes(np.nextafter, (ufuncs.result_dtype(xp, x1, x2),) * 2)[-1]
    x1, x2 = ns.asarrays(xp, dtype, x1, x2)
    return xp.nextafter(x1, x2)


def _nextafter_jvp(primals, out, tangents):
    """One step from ``x1`` moves with ``x1`` (slope 1 inside a binade) and not with ``x2``."""
    t = tangents[0]
    if t is None:
        return None
    aval = aval_of(out)
    t = convert(t, aval.dtype)
    return t if aval_of(t).shape == aval.shape else bind("broadcast_to", t, shape=aval.shape)


nextafter_p = Primitive(
    "nextafter",
    Rules(
        shape=_nextafter_shape,
        impl=_nextafter_impl,
        sharding=broadcasting(),
        writes_into=True,
        jvp=_nextafter_jvp,
        batch=elementwise_batch("nextafter"),
    ),
)

# --- complex ---------------------------------------------------------------------------------

_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}  # fmt: skip


def _complex_shape(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    strong = [a.dtype for a in (x, y) if not a.weak_type] or [x.dtype]
    if (
        len(set(strong)) != 1
        or strong[0] not in _COMPLEX
        or any(a.dtype.kind != "f" for a in (x, y))
    ):
        raise SpmdTypeError(
            f"spmd.lax.complex: x is {x} and y is {y}; lax.complex takes two float32 or two "
            f"float64 parts (it does not promote). Convert first, e.g. y.astype(x.dtype)."
        )
    return ShapedArray(broadcast_shape("complex", (x, y)), _COMPLEX[strong[0]])


def _part_dtype(xp, *parts) -> np.dtype:
    """The parts' float dtype: an array's (or a NumPy scalar's), before a Python float's."""
    strong = [
        np.asarray(p).dtype if xp is np or isinstance(p, np.generic) else ns.numpy_dtype(xp, p)
        for p in parts
        if type(p) is not float
    ]
    return strong[0] if strong else np.dtype(np.float64)


def _complex_impl(xp, x, y):
    dtype = _COMPLEX[_part_dtype(xp, x, y)]
    if xp is np:
        x, y = np.broadcast_arrays(x, y)
        out = np.empty(x.shape, dtype)
        out.real, out.imag = x, y
        return out
    x, y = ns.asarrays(xp, np.empty((), dtype).real.dtype, x, y)
    x, y = xp.broadcast_arrays(x, y)
    if ns.is_torch(xp):
        import torch

        return torch.complex(x, y)
    # x + i y from the parts as complex numbers: i * inf would be NaN + inf i, so infinite
    # imaginary parts are added as the constant (0, +-inf) instead of multiplied
    real, imag = ns.astype(xp, x, dtype), ns.astype(xp, y, dtype)
    finite = xp.where(xp.isinf(y), xp.zeros_like(imag), imag)
    infinite = xp.where(
        xp.isinf(y),
        xp.where(y > 0, xp.asarray(complex(0, np.inf), dtype=real.dtype, device=ns.device_of(x)),
                 xp.asarray(complex(0, -np.inf), dtype=real.dtype, device=ns.device_of(x))),
        xp.zeros_like(real),
    )  # fmt: skip
    return real + finite * 1j + infinite


def _complex_transpose(ct, x, y):
    """The transpose of ``x + i y`` in JAX's convention: ``real(ct)`` and ``-imag(ct)``."""
    parts = (bind("real", ct), bind("negative", bind("imag", ct)))
    cts = []
    for part, operand in zip(parts, (x, y), strict=True):
        if not isinstance(operand, UndefinedPrimal):
            cts.append(None)
            continue
        cts.append(convert(sum_to_shape(part, operand.aval.shape), operand.aval.dtype))
    return cts


def _complex_jvp(primals, out, tangents):
    """``complex(tx, ty)``, a missing tangent as zeros of its part's dtype."""
    part = np.empty((), aval_of(out).dtype).real.dtype
    tx, ty = (convert(instantiate(t, p), part) for t, p in zip(tangents, primals, strict=True))
    return complex_p.bind(tx, ty)


complex_p = Primitive(
    "complex",
    Rules(
        shape=_complex_shape,
        impl=_complex_impl,
        sharding=broadcasting("all"),
        jvp=_complex_jvp,
        transpose=_complex_transpose,
        batch=elementwise_batch("complex"),
    ),
)
