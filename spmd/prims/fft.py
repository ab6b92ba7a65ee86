"""The discrete Fourier transform as one primitive, ``fft``, in the manner of jax.lax.fft.

``fft(x, kind, axes, lengths, norm, inverse)`` transforms ``x`` over ``axes`` (distinct,
non-negative; the last one is the halved axis of a real transform):

- ``kind="c2c"``: complex to complex, forward or ``inverse``, each axis of its own length;
- ``kind="r2c"``: real to complex (rfftn, always forward): the last axis keeps
  ``lengths[-1] // 2 + 1`` entries, the others are transformed whole;
- ``kind="c2r"``: complex to real (irfftn, always inverse): the last axis, of
  ``lengths[-1] // 2 + 1`` entries, grows to ``lengths[-1]``.

``lengths`` are the transform's lengths along ``axes`` (for c2c and r2c the operand's sizes
there: spmd.numpy.fft crops or pads the operand to ``n``/``s`` before binding). ``norm`` is
NumPy's: "backward" (the inverse is scaled by 1/n), "ortho" (both by 1/sqrt(n)) or "forward"
(the forward one by 1/n). Dtypes follow NumPy 2: complex64 and float32 stay single precision.

The transform is linear, so its tangent is the transform of the tangent. Transposes use the
bilinear pairing ``<u, v> = Re(sum(u * v))`` (no conjugate), as JAX's do: the DFT matrix is
symmetric, so a c2c transform is its own transpose; r2c's transpose is the real part of the
c2c transform of the cotangent zero-padded along the halved axis; c2r's is the conjugate of
the r2c transform of the cotangent (with the opposite norm) times the weights (1, 2, ..., 2,
1) that count each stored half-spectrum entry's two mirror images.
"""

from __future__ import annotations

import numpy as np

from spmd.core.ad import UndefinedPrimal
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.prims import namespace
from spmd.prims.derivatives import bind, convert, instantiate
from spmd.sharding.rules import Factors

KINDS = ("c2c", "r2c", "c2r")
NORMS = ("backward", "ortho", "forward")
# The norm whose forward scaling is the given norm's inverse scaling, and back.
SWAPPED_NORM = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_REAL_OF = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
}
_COMPLEX_OF = {real: complex_ for complex_, real in _REAL_OF.items()}


def _fft_shape(x: ShapedArray, *, kind, axes, lengths, norm, inverse) -> ShapedArray:
    where = f"spmd fft (kind={kind}, axes={axes}, lengths={lengths}) of {x}"
    if kind not in KINDS or norm not in NORMS:
        raise SpmdValueError(f"{where}: kind must be one of {KINDS} and norm one of {NORMS}.")
    if not axes or len(axes) != len(lengths) or len(set(axes)) != len(axes):
        raise ShapeError(f"{where}: give one length per axis, each axis once.")
    if any(not 0 <= a < x.ndim for a in axes) or any(n < 1 for n in lengths):
        raise ShapeError(f"{where}: axes must be axes of the operand and lengths at least 1.")
    wanted = np.dtype(np.float32 if kind == "r2c" else np.complex64)
    dtypes = (_COMPLEX_OF if kind == "r2c" else _REAL_OF).keys()
    if x.dtype not in dtypes:
        raise SpmdTypeError(
            f"{where}: the operand must be {' or '.join(map(str, dtypes))} (like {wanted}); "
            f"convert it first, as spmd.numpy.fft does."
        )
    stored = list(lengths)
    if kind != "c2c":
        stored[-1] = lengths[-1] // 2 + 1
    have = tuple(x.shape[a] for a in axes)
    expected = tuple(stored) if kind != "r2c" else tuple(lengths)
    if have != expected:
        raise ShapeError(f"{where}: the operand's sizes along the axes are {have}, not {expected}.")
    shape = list(x.shape)
    for a, n in zip(axes, lengths if kind != "r2c" else stored, strict=True):
        shape[a] = n
    dtype = {"c2c": x.dtype, "r2c": _COMPLEX_OF.get(x.dtype), "c2r": _REAL_OF.get(x.dtype)}[kind]
    return ShapedArray(tuple(shape), dtype)


def _fft_impl(xp, x, *, kind, axes, lengths, norm, inverse):
    if namespace.size(x) == 0:  # torch's MKL refuses empty batches; the result is empty too
        aval = ShapedArray(tuple(x.shape), namespace.numpy_dtype(xp, x))
        out = _fft_shape(aval, kind=kind, axes=axes, lengths=lengths, norm=norm, inverse=inverse)
        if namespace.is_numpy(xp):
            return np.zeros(out.shape, out.dtype)
        return xp.zeros(out.shape, dtype=namespace.dtype_for(xp, out.dtype), device=x.device)
    if namespace.is_numpy(xp):
        import scipy.fft as module  # keeps complex64 and float32 single precision

        x = np.asarray(x)
    else:
        module = getattr(xp, "fft", None)
        if module is None:
            raise SpmdTypeError(
                f"the array namespace {xp.__name__} has no fft extension, so a device computing "
                f"with it cannot run spmd.numpy.fft; choose another backend with SPMD_BACKEND."
            )
    if kind == "c2c":
        fn = module.ifftn if inverse else module.fftn
        return fn(x, s=lengths, axes=axes, norm=norm)
    if kind == "r2c":
        return module.rfftn(x, s=lengths, axes=axes, norm=norm)
    return module.irfftn(x, s=lengths, axes=axes, norm=norm)


def _fft_sharding(ins, outs, *, axes, **params) -> Factors:
    """Dimensions off ``axes`` pass through (a batch-split fft runs on each device with no
    communication); the transformed ones are blocked, as every output element along them
    reads the whole input axis, so an operand split there is gathered first."""
    (x,), (out,) = ins, outs
    operand = tuple((f"d{i}",) if i not in axes else (f"in{i}",) for i in range(x.ndim))
    result = tuple((f"d{i}",) if i not in axes else (f"out{i}",) for i in range(x.ndim))
    sizes = {f"d{i}": n for i, n in enumerate(x.shape) if i not in axes}
    sizes |= {f"in{a}": x.shape[a] for a in axes} | {f"out{a}": out.shape[a] for a in axes}
    blocked = frozenset(f"{side}{a}" for a in axes for side in ("in", "out"))
    return Factors((operand,), (result,), sizes, blocked=blocked)


def _fft_jvp(primals, out, tangents, **params):
    (x,), (t,) = primals, tangents
    return None if t is None else fft_p.bind(instantiate(t, x), **params)


def _pad_axis(x, axis: int, size: int):
    """``x`` zero-padded at the end of ``axis`` to ``size``."""
    aval = aval_of(x)
    extra = size - aval.shape[axis]
    if extra == 0:
        return x
    shape = tuple(extra if i == axis else n for i, n in enumerate(aval.shape))
    zeros = bind("broadcast_to", np.zeros((), aval.dtype), shape=shape)
    return bind("concatenate", x, zeros, axis=axis)


def _half_weights(n: int, stored: int, dtype) -> np.ndarray:
    """How many entries of the full spectrum of length ``n`` each stored entry stands for."""
    weights = np.full(stored, 2, dtype)
    weights[0] = 1
    if n % 2 == 0:
        weights[-1] = 1
    return weights


def _fft_transpose(ct, x, *, kind, axes, lengths, norm, inverse):
    if not isinstance(x, UndefinedPrimal):
        return [None]
    out_dtype = _fft_shape(x.aval, kind=kind, axes=axes, lengths=lengths, norm=norm,
                           inverse=inverse).dtype  # fmt: skip
    ct = convert(bind("real", ct) if out_dtype.kind == "f" and aval_of(ct).dtype.kind == "c"
                 else ct, out_dtype)  # fmt: skip
    if kind == "c2c":
        return [fft_p.bind(ct, kind=kind, axes=axes, lengths=lengths, norm=norm, inverse=inverse)]
    last = axes[-1]
    if kind == "r2c":
        full = _pad_axis(ct, last, lengths[-1])
        spectrum = fft_p.bind(full, kind="c2c", axes=axes, lengths=lengths, norm=norm,
                              inverse=False)  # fmt: skip
        return [bind("real", spectrum)]
    half = fft_p.bind(ct, kind="r2c", axes=axes, lengths=lengths, norm=SWAPPED_NORM[norm],
                      inverse=False)  # fmt: skip
    weights = _half_weights(lengths[-1], x.aval.shape[last], out_dtype)
    weights = weights.reshape([-1 if i == last else 1 for i in range(x.aval.ndim)])
    return [bind("multiply", bind("conjugate", half), weights)]


def _fft_batch(args, dims, *, axes, **params):
    (x,), (d,) = args, dims
    return fft_p.bind(x, axes=tuple(a + (a >= d) for a in axes), **params), d


fft_p = Primitive(
    "fft",
    Rules(
        shape=_fft_shape,
        impl=_fft_impl,
        sharding=_fft_sharding,
        jvp=_fft_jvp,
        transpose=_fft_transpose,
        batch=_fft_batch,
    ),
)
