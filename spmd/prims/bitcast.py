"""``bitcast_convert_type``: an array's bytes read as another dtype (jax.lax's).

Same width: same shape. A narrower dtype adds a trailing dimension of the width ratio (one
float32 is four uint8); a wider one takes that trailing dimension away, and the operand's
last dimension must be the ratio. Bytes are read in the machine's order, as XLA's on CPU.
The trailing dimension added or taken away is never split; every other one may be, with no
communication. Its derivative is zero (JAX's), and vmap moves the batch dimension first.
"""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.errors import ShapeError, SpmdTypeError
from spmd.prims import namespace as ns
from spmd.prims.derivatives import bind, moveaxis
from spmd.sharding.rules import Factors, parse_factors


def _check_dtypes(old: np.dtype, new: np.dtype) -> None:
    if np.bool_ in (old.type, new.type) and old != new:
        raise SpmdTypeError(
            f"spmd.lax.bitcast_convert_type: cannot bitcast {old} to {new}: a bool's byte may "
            f"only be 0 or 1, so bool bitcasts only to itself; use convert_element_type."
        )
    if (old.kind == "c") != (new.kind == "c"):
        raise SpmdTypeError(
            f"spmd.lax.bitcast_convert_type: cannot bitcast {old} to {new}: complex dtypes "
            f"bitcast only to complex ones (as in JAX); bitcast the real and imaginary parts "
            f"(lax.real, lax.imag) instead."
        )


def _shape(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    old, new = x.dtype, np.dtype(new_dtype)
    _check_dtypes(old, new)
    if old.itemsize == new.itemsize:
        return ShapedArray(x.shape, new)
    if old.itemsize > new.itemsize:
        return ShapedArray((*x.shape, old.itemsize // new.itemsize), new)
    ratio = new.itemsize // old.itemsize
    if not x.shape or x.shape[-1] != ratio:
        raise ShapeError(
            f"spmd.lax.bitcast_convert_type: {x} to {new} needs a last dimension of "
            f"{ratio} ({new.itemsize} bytes / {old.itemsize}), but the operand's shape is "
            f"{x.shape}; reshape it so that its last dimension holds {ratio} {old} elements."
        )
    return ShapedArray(x.shape[:-1], new)


def _view(x, new: np.dtype):
    """A NumPy or CuPy array's bytes as ``new``, with JAX's shapes."""
    x = x if x.flags.c_contiguous else x.copy()
    if x.dtype.itemsize > new.itemsize:  # NumPy widens the last dimension instead
        return x[..., None].view(new)
    view = x.view(new)
    return view if x.dtype.itemsize == new.itemsize else view[..., 0]


def _impl(xp, x, *, new_dtype):
    new = np.dtype(new_dtype)
    if ns.is_numpy(xp) or ns.is_cupy(xp):
        return _view(np.asarray(x) if ns.is_numpy(xp) else x, new)
    if ns.is_torch(xp) and x.numel():
        target, x = ns.dtype_for(xp, new), x.contiguous()
        if x.element_size() > new.itemsize:
            return x.unsqueeze(-1).view(target)
        view = x.view(target)
        return view if x.element_size() == new.itemsize else view.squeeze(-1)
    try:  # no bitcast in the Array API: through a NumPy view of the host memory
        return xp.asarray(_view(ns.host_view(x), new))
    except (BufferError, RuntimeError, TypeError) as error:
        raise SpmdTypeError(
            f"spmd.lax.bitcast_convert_type: cannot reinterpret the bytes of a {xp.__name__} "
            f"array ({error}); choose another backend with SPMD_BACKEND."
        ) from error


def _sharding(ins, outs, *, new_dtype) -> Factors:
    old, new = ins[0], outs[0]
    kept = " ".join(f"d{i}" for i in range(min(old.ndim, new.ndim)))
    if old.ndim == new.ndim:
        text = f"{kept} -> {kept}"
    elif old.ndim < new.ndim:
        text = f"{kept} -> {kept} w"
    else:
        text = f"{kept} w -> {kept}"
    return parse_factors(text, [old.shape], reduce=None, blocked=("w",))


def _batch(args, dims, *, new_dtype):
    return bind("bitcast_convert_type", moveaxis(args[0], dims[0], 0), new_dtype=new_dtype), 0


def _zero_jvp(primals, out, tangents, **params):
    return None


bitcast_convert_type_p = Primitive(
    "bitcast_convert_type",
    Rules(shape=_shape, impl=_impl, sharding=_sharding, jvp=_zero_jvp, batch=_batch),
)
