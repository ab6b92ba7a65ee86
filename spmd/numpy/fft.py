"""spmd.numpy.fft: NumPy's fft module and the Array API's fft extension on spmd values.

Every transform crops or zero-pads its operand to ``n`` (``s``) along the transformed axes
and binds the one ``fft`` primitive (spmd/prims/fft.py): c2c for fft/ifft/fftn/ifftn, r2c for
rfft/rfftn, c2r for irfft/irfftn; hfft and ihfft are irfft and rfft of the conjugate with the
opposite norm, as in NumPy. Dtypes follow NumPy 2 (and the standard): complex64 and float32
stay single precision, other real inputs become float64 / complex128. fftfreq, rfftfreq,
fftshift and ifftshift are compositions of arange and roll.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spmd.core.axes import as_int, normalize_axes, normalize_axis
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.numpy.creation import arange, asarray, zeros
from spmd.numpy.device_arg import takes_device
from spmd.numpy.elementwise import conjugate  # type: ignore[attr-defined]
from spmd.numpy.shaping import astype, concatenate, roll
from spmd.prims.fft import NORMS, SWAPPED_NORM, fft_p

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]

_SINGLE = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.complex64))


def _norm(norm: Any, fn: str) -> str:
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise SpmdValueError(
            f"spmd.numpy.fft.{fn}: norm={norm!r} is not a normalization; pass "
            f'"backward" (the default), "ortho" or "forward".'
        )
    return norm


def _operand(a: Any, fn: str, complex_: bool):
    """``a`` as an spmd value of the transform's input dtype: complex (c2c, c2r) or real
    (r2c), single precision kept."""
    x = asarray(a)
    dtype = aval_of(x).dtype
    if not complex_ and dtype.kind == "c":
        raise SpmdTypeError(
            f"spmd.numpy.fft.{fn}: the operand is {dtype}, but {fn} transforms real input; "
            f"take its real part (x.real) first, or use the complex transform (fft, fftn)."
        )
    single = dtype in _SINGLE
    want = (np.complex64 if single else np.complex128) if complex_ else (
        np.float32 if single else np.float64)  # fmt: skip
    return x if dtype == want else astype(x, want)


def _length(n: Any, fn: str, argument: str = "n") -> int:
    n = as_int(n, fn, argument)
    if n < 1:
        raise SpmdValueError(
            f"{fn}: {argument}={n} is not a number of FFT data points; pass a length of at "
            f"least 1 (or leave it out to use the axis' size)."
        )
    return n


def _resized(x, axis: int, size: int):
    """``x`` cropped or zero-padded at the end of ``axis`` to ``size``, as NumPy's ``n``."""
    shape = aval_of(x).shape
    if size == shape[axis]:
        return x
    if size < shape[axis]:
        return x[(slice(None),) * axis + (slice(0, size),)]
    extra = tuple(size - n if i == axis else n for i, n in enumerate(shape))
    return concatenate([x, zeros(extra, aval_of(x).dtype)], axis=axis)


def _transform(x, kind: str, axes: tuple, lengths: tuple, norm: str, inverse: bool, fn: str):
    """The fft primitive over distinct ``axes``: the operand resized first (c2r's last axis
    to the half spectrum ``lengths[-1] // 2 + 1``)."""
    for axis, n in zip(axes, lengths, strict=True):
        n = _length(n, f"spmd.numpy.fft.{fn}", "n" if len(axes) == 1 else "s")
        stored = n // 2 + 1 if kind == "c2r" and axis == axes[-1] else n
        x = _resized(x, axis, stored)
    return fft_p.bind(x, kind=kind, axes=axes, lengths=tuple(lengths), norm=norm, inverse=inverse)


def _one_axis(a, n, axis, norm, fn: str, kind: str, inverse: bool):
    x = _operand(a, fn, complex_=kind != "r2c")
    aval = aval_of(x)
    if aval.ndim == 0:
        raise ShapeError(
            f"spmd.numpy.fft.{fn}: the operand {aval} has no axes to transform; pass an array "
            f"of at least one dimension."
        )
    axis = normalize_axis(axis, aval.ndim, f"spmd.numpy.fft.{fn}", str(aval))
    if n is None:
        n = aval.shape[axis] if kind != "c2r" else 2 * (aval.shape[axis] - 1)
    return _transform(x, kind, (axis,), (n,), _norm(norm, fn), inverse, fn)


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.fft``: the discrete Fourier transform along ``axis``, of length ``n``."""
    return _one_axis(a, n, axis, norm, "fft", "c2c", False)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.ifft``: the inverse of ``fft``."""
    return _one_axis(a, n, axis, norm, "ifft", "c2c", True)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.rfft``: the transform of real input, ``n // 2 + 1`` entries along ``axis``."""
    return _one_axis(a, n, axis, norm, "rfft", "r2c", False)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.irfft``: the inverse of ``rfft``, ``n`` real entries along ``axis`` (default
    ``2 * (m - 1)`` for ``m`` input entries)."""
    return _one_axis(a, n, axis, norm, "irfft", "c2r", True)


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.hfft``: the real transform of a Hermitian-symmetric signal given by its
    first half: ``irfft(conj(a), n)`` with the opposite norm."""
    x = conjugate(_operand(a, "hfft", complex_=True))
    return _one_axis(x, n, axis, SWAPPED_NORM[_norm(norm, "hfft")], "hfft", "c2r", True)


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None):
    """``numpy.fft.ihfft``: the inverse of ``hfft``: ``conj(rfft(a, n))`` with the opposite
    norm."""
    spectrum = _one_axis(a, n, axis, SWAPPED_NORM[_norm(norm, "ihfft")], "ihfft", "r2c", False)
    return conjugate(spectrum)


def _axes_and_lengths(x, s, axes, fn: str, kind: str) -> tuple[tuple, tuple]:
    """NumPy's reading of ``s`` and ``axes``: both None, every axis; ``s`` alone, the last
    ``len(s)`` axes; ``axes`` alone, their sizes (c2r: ``2 * (m - 1)`` on the last); -1 in
    ``s``, that axis' size."""
    aval = aval_of(x)
    where = f"spmd.numpy.fft.{fn}"
    if s is not None:
        s = tuple(as_int(v, where, "s") for v in s)
    if axes is None:
        count = aval.ndim if s is None else len(s)
        if count > aval.ndim:
            raise ShapeError(
                f"{where}: s={s!r} has {count} lengths, but the operand {aval} has only "
                f"{aval.ndim} axes; give at most one length per axis, with axes= to name them."
            )
        axes = tuple(range(aval.ndim - count, aval.ndim))
    else:
        axes = tuple(normalize_axis(a, aval.ndim, where, str(aval), "axes")
                     for a in (axes if isinstance(axes, (tuple, list)) else (axes,)))  # fmt: skip
    if s is None:
        s = tuple(aval.shape[a] for a in axes)
        if kind == "c2r" and axes:
            s = (*s[:-1], 2 * (s[-1] - 1))
    if len(s) != len(axes):
        raise ShapeError(
            f"{where}: s={s!r} gives {len(s)} lengths for the {len(axes)} axes {axes}; give "
            f"one length per axis."
        )
    s = tuple(aval.shape[a] if n == -1 else n for a, n in zip(axes, s, strict=True))
    return axes, s


def _many_axes(a, s, axes, norm, fn: str, kind: str, inverse: bool):
    x = _operand(a, fn, complex_=kind != "r2c")
    axes, s = _axes_and_lengths(x, s, axes, fn, kind)
    norm = _norm(norm, fn)
    if not axes:
        if kind != "c2c":
            raise ShapeError(f"spmd.numpy.fft.{fn}: axes=() leaves nothing to transform; "
                             f"name at least one axis.")  # fmt: skip
        return asarray(a)  # NumPy returns the operand unchanged
    if len(set(axes)) == len(axes):
        return _transform(x, kind, axes, s, norm, inverse, fn)
    # An axis named twice is transformed twice, one axis at a time from the last, as NumPy does.
    if kind == "r2c":
        x = _transform(x, kind, axes[-1:], s[-1:], norm, inverse, fn)
        return _many_axes(x, s[:-1], axes[:-1], norm, fn, "c2c", False)
    if kind == "c2r":
        x = _many_axes(x, s[:-1], axes[:-1], norm, fn, "c2c", True)
        return _transform(x, kind, axes[-1:], s[-1:], norm, inverse, fn)
    for axis, n in reversed(tuple(zip(axes, s, strict=True))):
        x = _transform(x, kind, (axis,), (n,), norm, inverse, fn)
    return x


def fftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None):
    """``numpy.fft.fftn``: the transform over ``axes`` (default all), of lengths ``s``."""
    return _many_axes(a, s, axes, norm, "fftn", "c2c", False)


def ifftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None):
    """``numpy.fft.ifftn``: the inverse of ``fftn``."""
    return _many_axes(a, s, axes, norm, "ifftn", "c2c", True)


def rfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None):
    """``numpy.fft.rfftn``: the transform of real input over ``axes``, the last one halved."""
    return _many_axes(a, s, axes, norm, "rfftn", "r2c", False)


def irfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None):
    """``numpy.fft.irfftn``: the inverse of ``rfftn``, real, of lengths ``s``."""
    return _many_axes(a, s, axes, norm, "irfftn", "c2r", True)


def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None):
    """``numpy.fft.fft2``: ``fftn`` over the last two axes."""
    return _many_axes(a, s, axes, norm, "fft2", "c2c", False)


def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None):
    """``numpy.fft.ifft2``: ``ifftn`` over the last two axes."""
    return _many_axes(a, s, axes, norm, "ifft2", "c2c", True)


def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None):
    """``numpy.fft.rfft2``: ``rfftn`` over the last two axes."""
    return _many_axes(a, s, axes, norm, "rfft2", "r2c", False)


def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None):
    """``numpy.fft.irfft2``: ``irfftn`` over the last two axes."""
    return _many_axes(a, s, axes, norm, "irfft2", "c2r", True)


def _frequency_dtype(dtype: Any, fn: str) -> np.dtype:
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind not in "fc":
        raise SpmdTypeError(
            f"spmd.numpy.fft.{fn}: dtype={dtype} is not a floating dtype; the frequencies "
            f"are fractions, so pass float32 or float64 (the default)."
        )
    return dtype


@takes_device
def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None):
    """``numpy.fft.fftfreq``: the sample frequencies ``[0, 1, ..., -(n // 2), ..., -1] / (d * n)``
    of an ``n``-point transform with sample spacing ``d``."""
    n = _length(n, "spmd.numpy.fft.fftfreq")
    dtype = _frequency_dtype(dtype, "fftfreq")
    positive = (n - 1) // 2 + 1
    k = concatenate([arange(0, positive, dtype=np.int64), arange(-(n // 2), 0, dtype=np.int64)])
    return _scaled(k, 1.0 / (n * d), dtype)


@takes_device
def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None):
    """``numpy.fft.rfftfreq``: the ``n // 2 + 1`` non-negative sample frequencies of an
    ``n``-point real transform with sample spacing ``d``."""
    n = _length(n, "spmd.numpy.fft.rfftfreq")
    dtype = _frequency_dtype(dtype, "rfftfreq")
    return _scaled(arange(0, n // 2 + 1, dtype=np.int64), 1.0 / (n * d), dtype)


def _scaled(k, scale: Any, dtype: np.dtype):
    """``k * scale`` in ``dtype`` (a Python ``scale`` is weakly typed: float32 stays)."""
    result = astype(k, dtype) * scale
    return result if aval_of(result).dtype == dtype else astype(result, dtype)


def _shift(x: Any, axes: Any, fn: str, sign: int):
    x = asarray(x)
    aval = aval_of(x)
    if axes is None:
        axes = tuple(range(aval.ndim))
    else:
        axes = normalize_axes(axes, aval.ndim, f"spmd.numpy.fft.{fn}", str(aval), "axes")
    if not axes:
        return x
    return roll(x, tuple(sign * (aval.shape[a] // 2) for a in axes), axes)


def fftshift(x: Any, axes: Any = None):
    """``numpy.fft.fftshift``: the zero frequency moved to the middle of ``axes`` (default
    all): a roll by ``n // 2``."""
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x: Any, axes: Any = None):
    """``numpy.fft.ifftshift``: the inverse of ``fftshift``, a roll by ``-(n // 2)``."""
    return _shift(x, axes, "ifftshift", -1)
