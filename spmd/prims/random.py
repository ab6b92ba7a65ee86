"""Random primitives: Threefry-2x32 over 64-bit counters, one counter per element.

Element ``i`` (its flat index in the global, row-major result) gets the counter ``i``;
its bits are ``threefry2x32(key, (i >> 32, i & 0xFFFFFFFF))``, so they depend only on the
key, on ``i`` and on the result's shape. That is what makes the numbers the same whatever
the sharding: a device computes ``bits_for_counters(key, counters(shape, block))`` for its
own block only (the partitioner gives it the block's place through ``block_params``). The
layout of bits and floats follows JAX's partitionable Threefry (``jax_threefry_partitionable``),
so the numbers equal ``jax.random``'s for the same key. They are computed in NumPy whatever
the backend (``on_host``), so they are the same on every array library.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from spmd.core.ad import zeros
from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules, primitive_named
from spmd.core.trace import aval_of
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims.derivatives import batch_size, bind, member_aval
from spmd.prims.indexing import Slice
from spmd.prims.random_host import on_host
from spmd.sharding.rules import Factors, broadcast_factors

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA  # Threefry's key-schedule constant
FLOAT_DTYPES = tuple(map(np.dtype, (np.float16, np.float32, np.float64)))
UINT_DTYPES = tuple(map(np.dtype, (np.uint8, np.uint16, np.uint32, np.uint64)))


def threefry2x32(xp, key_words, x0, x1):
    """Threefry-2x32 with 20 rounds (Salmon et al., SC'11), elementwise over ``x0, x1``.

    ``key_words`` is a uint32[2] key; ``x0`` and ``x1`` are uint32 arrays of one shape (the
    two words of each counter). Returns the two uint32 output words.
    """
    key_words = xp.asarray(key_words, dtype=xp.uint32)
    k0, k1 = key_words[0], key_words[1]
    schedule = (k0, k1, k0 ^ k1 ^ xp.uint32(_PARITY))
    shape = xp.shape(x0)
    x0 = xp.reshape(xp.asarray(x0, dtype=xp.uint32), (-1,)) + schedule[0]
    x1 = xp.reshape(xp.asarray(x1, dtype=xp.uint32), (-1,)) + schedule[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = (x1 << r) | (x1 >> (32 - r))
            x1 = x1 ^ x0
        x0 = x0 + schedule[(i + 1) % 3]
        x1 = x1 + schedule[(i + 2) % 3] + (i + 1)
    return xp.reshape(x0, shape), xp.reshape(x1, shape)


def counters(shape: Sequence[int], index: Sequence[slice] = (), xp=np):
    """The uint64 counters (global row-major flat indices) of ``shape``, or of its block
    ``index`` (a tuple of slices, as ``Sharding.devices_indices_map`` gives), without
    materializing the rest of the array."""
    shape = tuple(shape)
    index = tuple(index) + (slice(None),) * (len(shape) - len(index))
    flat = xp.zeros((), dtype=xp.uint64)
    stride = 1
    for axis in reversed(range(len(shape))):
        start, stop, step = index[axis].indices(shape[axis])
        positions = xp.arange(start, stop, step).astype(xp.uint64) * xp.uint64(stride)
        flat = xp.expand_dims(positions, tuple(range(1, len(shape) - axis))) + flat
        stride *= shape[axis]
    return flat


def bits_for_counters(key_words, counters, dtype=np.uint32, xp=np):
    """Random bits of ``dtype`` (uint8 to uint64) for uint64 ``counters``, a pure function.

    Each element depends only on the key and on its own counter, so a device can compute the
    slice of counters it holds and get exactly the slice of the whole result.
    """
    counters = xp.asarray(counters, dtype=xp.uint64)
    hi, lo = (counters >> xp.uint64(32)).astype(xp.uint32), counters.astype(xp.uint32)
    y0, y1 = threefry2x32(xp, key_words, hi, lo)
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8:
        return (y0.astype(xp.uint64) << xp.uint64(32)) | y1.astype(xp.uint64)
    return (y0 ^ y1).astype(dtype)


def unit_floats(bits, dtype, xp=np):
    """Floats in [0, 1) from unsigned bits of the same width: the top mantissa bits of
    ``bits`` under the exponent of 1.0, minus 1 (as JAX's ``uniform``)."""
    info = np.finfo(dtype)
    shift = info.bits - info.nmant
    one = np.array(1.0, dtype).view(bits.dtype)
    mantissa = xp.reshape(bits, (-1,)) >> bits.dtype.type(shift)
    floats = (mantissa | one).view(dtype) - dtype.type(1)
    return xp.reshape(floats, xp.shape(bits))


def scale(floats, minval, maxval, xp=np):
    """``floats`` in [0, 1) mapped to [minval, maxval): clipped so rounding never gives
    ``maxval`` itself, nor less than ``minval``."""
    dtype = floats.dtype
    lo, hi = xp.asarray(minval, dtype=dtype), xp.asarray(maxval, dtype=dtype)
    below_hi = xp.nextafter(hi, dtype.type(-np.inf))
    return xp.maximum(lo, xp.minimum(floats * (hi - lo) + lo, below_hi))


_ERFINV_32 = (  # Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011)
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682),
)  # fmt: skip
_ERFINV_64 = (  # Giles, double precision: w < 6.25, w < 16, otherwise
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221),
)  # fmt: skip


def _horner(xp, coefficients, w):
    p = xp.zeros_like(w) + coefficients[0]
    for c in coefficients[1:]:
        p = p * w + c
    return p


def erfinv(x, xp=np):
    """The inverse error function on (-1, 1) by Giles' polynomials, in float32 for float16 and
    float32 inputs (about 1 ulp there) and in float64 for float64; ±1 gives ±inf."""
    dtype = x.dtype
    x = x.astype(np.float64 if dtype == np.float64 else np.float32)
    inside = xp.abs(x) < 1
    safe = xp.where(inside, x, 0)  # ±1 (and nan) are handled at the end, without warnings
    w = -xp.log1p(-safe * safe)
    if x.dtype == np.float32:
        small = w < 5
        w = xp.where(small, w - 2.5, xp.sqrt(w) - 3).astype(np.float32)
        p = xp.where(small, _horner(xp, _ERFINV_32[0], w), _horner(xp, _ERFINV_32[1], w))
    else:
        small, medium = w < 6.25, w < 16
        p = xp.where(
            small,
            _horner(xp, _ERFINV_64[0], w - 3.125),
            xp.where(
                medium,
                _horner(xp, _ERFINV_64[1], xp.sqrt(w) - 3.25),
                _horner(xp, _ERFINV_64[2], xp.sqrt(w) - 5.0),
            ),
        )
    result = xp.where(
        inside, p * x, xp.where(xp.abs(x) == 1, xp.copysign(x.dtype.type(np.inf), x), np.nan)
    )
    return result.astype(dtype)


# --- primitives --------------------------------------------------------------------------


def check_key(name: str, key: ShapedArray) -> None:
    """Raise unless ``key`` is one raw key: uint32[2]."""
    where = f"spmd.random.{name}: the key must be one uint32[2] key from spmd.random.key(seed)"
    if key.dtype != np.uint32:
        raise SpmdTypeError(f"{where}, but it has dtype {key.dtype} ({key}).")
    if key.shape != (2,):
        hint = (
            " It looks like a batch of keys (from split): pass one of them, e.g. keys[0]."
            if key.ndim >= 2 and key.shape[-1] == 2
            else ""
        )
        raise ShapeError(f"{where}, but it is {key}.{hint}")


def _random_bits_shape(key: ShapedArray, *, shape: tuple[int, ...], dtype: np.dtype):
    check_key("bits", key)
    return ShapedArray(shape, dtype)


def block_counters(xp, shape, global_shape=None, start=None):
    """The counters of a ``shape`` block that starts at ``start`` in a ``global_shape``
    result; with no ``global_shape``, of the whole ``shape`` result."""
    if global_shape is None:
        return counters(shape, xp=xp)
    index = tuple(slice(a, a + n) for a, n in zip(start, shape, strict=True))
    return counters(global_shape, index, xp=xp)


def _random_bits_impl(xp, key, *, shape, dtype, global_shape=None, start=None):
    return bits_for_counters(key, block_counters(xp, shape, global_shape, start), dtype, xp=xp)


def check_bound(name: str, what: str, bound: ShapedArray, shape: tuple[int, ...]) -> None:
    if bound.dtype.kind not in "biuf":
        raise SpmdTypeError(f"spmd.random.{name}: {what} must be a real number, not {bound}.")
    if not _broadcasts(bound.shape, shape):
        raise ShapeError(
            f"spmd.random.{name}: {what} {bound} does not broadcast to the requested shape "
            f"{shape}; give {what} a shape that broadcasts to it (or a scalar)."
        )


def _broadcasts(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(small, shape) == shape
    except ValueError:
        return False


def _uniform_shape(key, minval, maxval, *, shape, dtype):
    check_key("uniform", key)
    check_bound("uniform", "minval", minval, shape)
    check_bound("uniform", "maxval", maxval, shape)
    return ShapedArray(shape, dtype)


def uniform_impl(xp, key, minval, maxval, *, shape, dtype, global_shape=None, start=None):
    width = np.dtype(f"uint{dtype.itemsize * 8}")
    block = block_counters(xp, shape, global_shape, start)
    floats = unit_floats(bits_for_counters(key, block, width, xp=xp), dtype, xp)
    return scale(floats, minval, maxval, xp)


def _normal_shape(key, *, shape, dtype):
    check_key("normal", key)
    return ShapedArray(shape, dtype)


def _normal_impl(xp, key, *, shape, dtype, global_shape=None, start=None):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))  # keeps erfinv finite
    block = {"global_shape": global_shape, "start": start}
    u = uniform_impl(xp, key, lo, 1.0, shape=shape, dtype=dtype, **block)
    return xp.asarray(erfinv(xp.asarray(u), xp) * dtype.type(math.sqrt(2)), dtype=dtype)


def _split_shape(key, *, shape):
    check_key("split", key)
    return ShapedArray((*shape, 2), np.dtype(np.uint32))


def split_impl(xp, key, *, shape, global_shape=None, start=None):
    flat = block_counters(xp, shape, global_shape, start)
    hi, lo = (flat >> xp.uint64(32)).astype(xp.uint32), flat.astype(xp.uint32)
    return xp.stack(threefry2x32(xp, key, hi, lo), axis=-1)


def _fold_in_shape(key, data):
    check_key("fold_in", key)
    if data.dtype.kind not in "biu" or data.shape:
        raise SpmdTypeError(
            f"spmd.random.fold_in: data must be one integer (a Python int or an integer "
            f"scalar), not {data}."
        )
    return ShapedArray((2,), np.dtype(np.uint32))


def _fold_in_impl(xp, key, data):
    word = xp.asarray(data).astype(xp.uint32).reshape(1)
    y0, y1 = threefry2x32(xp, key, xp.zeros(1, dtype=xp.uint32), word)
    return xp.concatenate([y0, y1])


# --- sharding ----------------------------------------------------------------------------


def sampler_sharding(ins, outs, **params) -> Factors:
    """The key is read whole (no factor splits its dimension); every dimension of the result
    is free, and uniform's bounds broadcast against it as elementwise operands do."""
    factors = broadcast_factors([a.shape for a in ins[1:]], outs[0].shape)
    return Factors((((),), *factors.operands), factors.results, factors.sizes)


def _split_sharding(ins, outs, *, shape) -> Factors:
    """As a sampler's, with each new key's two words kept together."""
    factors = broadcast_factors([], shape)
    return Factors((((),),), ((*factors.results[0], ()),), factors.sizes)


def block_params(params, in_shapes, out_shapes, in_dtypes, out_bounds, *, key_words=0) -> dict:
    """A device computes only its block of the result: ``shape`` becomes the block's and
    ``global_shape``/``start`` place it in the whole (``key_words``: trailing dimensions of
    the result that hold words of keys, not elements)."""
    bounds = out_bounds[0][: len(out_bounds[0]) - key_words]
    if all((a, b) == (0, n) for (a, b), n in zip(bounds, params["shape"], strict=True)):
        return params
    shape, start = tuple(b - a for a, b in bounds), tuple(a for a, _ in bounds)
    return {**params, "shape": shape, "global_shape": params["shape"], "start": start}


def per_member(name: str):
    """Batching by generating for each batch member on its own (member ``b``'s keys and
    bounds indexed at ``b``) and stacking the results: each member's numbers are exactly
    those it would get unbatched."""

    def batch(args, dims, **params):
        primitive = primitive_named(name)
        size = batch_size(args, dims)
        if size == 0:
            avals = [member_aval(aval_of(a), d) for a, d in zip(args, dims, strict=True)]
            aval = primitive.rules.shape(*avals, **params)
            return zeros(ShapedArray((0, *aval.shape), aval.dtype)), 0
        outs = []
        for b in range(size):
            member = []
            for a, d in zip(args, dims, strict=True):
                if d is not None:
                    shape = aval_of(a).shape
                    index = [Slice(0, n, 1) for n in shape]
                    index[d] = b
                    a = bind("getitem", a, index=tuple(index))
                member.append(a)
            out = primitive.bind(*member, **params)
            outs.append(bind("reshape", out, new_sizes=(1, *aval_of(out).shape)))
        return bind("concatenate", *outs, axis=0), 0

    return batch


random_bits_p = Primitive(
    "random_bits",
    Rules(
        shape=_random_bits_shape,
        impl=on_host(_random_bits_impl),
        sharding=sampler_sharding,
        local_params=block_params,
        batch=per_member("random_bits"),
    ),
)
random_uniform_p = Primitive(
    "random_uniform",
    Rules(
        shape=_uniform_shape,
        impl=on_host(uniform_impl),
        sharding=sampler_sharding,
        local_params=block_params,
        batch=per_member("random_uniform"),
    ),
)
random_normal_p = Primitive(
    "random_normal",
    Rules(
        shape=_normal_shape,
        impl=on_host(_normal_impl),
        sharding=sampler_sharding,
        local_params=block_params,
        batch=per_member("random_normal"),
    ),
)
threefry_split_p = Primitive(
    "threefry_split",
    Rules(
        shape=_split_shape,
        impl=on_host(split_impl),
        sharding=_split_sharding,
        local_params=functools.partial(block_params, key_words=1),
        batch=per_member("threefry_split"),
    ),
)
threefry_fold_in_p = Primitive(  # its result is one key: computed whole wherever it is needed
    "threefry_fold_in",
    Rules(
        shape=_fold_in_shape,
        impl=on_host(_fold_in_impl),
        sharding=None,
        batch=per_member("threefry_fold_in"),
    ),
)
