"""Special-function primitives: erf, erfc, erf_inv, lgamma, digamma and polygamma, elementwise.

NumPy has none of them, so NumPy arrays are computed with scipy.special, PyTorch tensors with
torch.special (polygamma on the host: torch's float64 one is off by ~1e-9), CuPy arrays with
cupyx.scipy.special; other namespaces (array_api_strict) go through the host: DLPack to NumPy,
scipy.special, back. Results are floats: bools and integers become the float NumPy's float
ufuncs give them (float16 for bool, int8 and uint8, float32 for int16 and uint16, float64 for
wider integers), float16 is computed in float32, and complex input is refused (as jax.lax
refuses it). Each is elementwise: its sharding rule lets every dimension of its operand
through, and vmap maps it over the batch dimension as it stands.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.core.trace import aval_of
from spmd.errors import SpmdTypeError
from spmd.prims import namespace
from spmd.prims.derivatives import bind, convert, unary_batch
from spmd.prims.elementwise import broadcasting

# primitive name -> (scipy.special's / cupyx's name, torch.special's name)
_FUNCTIONS = {
    "erf": ("erf", "erf"),
    "erfc": ("erfc", "erfc"),
    "erf_inv": ("erfinv", "erfinv"),
    "lgamma": ("gammaln", "gammaln"),
    "digamma": ("digamma", "digamma"),
    "polygamma": ("polygamma", "polygamma"),
}


def float_dtype(dtype: np.dtype) -> np.dtype:
    """The float dtype NumPy's float ufuncs (``np.exp``) give an operand of ``dtype``."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind == "f" else np.promote_types(dtype, np.float16)


def _shape_rule(name: str):
    def shape(x: ShapedArray, **params) -> ShapedArray:
        if x.dtype.kind == "c":
            raise SpmdTypeError(
                f"spmd.lax.{name} does not support {x}: it is defined for real numbers only "
                f"(as jax.lax.{name}). Take the real part first, e.g. {name}(x.real)."
            )
        return ShapedArray(x.shape, float_dtype(x.dtype), x.weak_type)

    return shape


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16 is computed in float32 (scipy.special has no float16 loops)."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _call(module, name: str, x, order):
    fn = getattr(module, name)
    return fn(x) if order is None else fn(order, x)


def _on_host(xp, name: str, x, dtype: np.dtype, order):
    """A namespace without the function: through NumPy and scipy.special, on the host."""
    host = namespace.host_view(x)
    result = np.asarray(_call(scipy.special, name, host, order)).astype(dtype, copy=False)
    return xp.asarray(result, device=x.device)


def _impl_rule(name: str):
    scipy_name, torch_name = _FUNCTIONS[name]

    def impl(xp, x, order=None):
        if xp is np:
            x = np.asarray(x)
            dtype = float_dtype(x.dtype)
            computed = _call(scipy.special, scipy_name, x.astype(_compute_dtype(dtype)), order)
            return np.asarray(computed).astype(dtype, copy=False)
        x = namespace.asarray(xp, x)
        dtype = float_dtype(namespace.numpy_dtype(xp, x))
        x = namespace.astype(xp, x, _compute_dtype(dtype))
        if namespace.is_torch(xp) and name == "polygamma":  # torch's is off by ~1e-9
            host = _call(scipy.special, scipy_name, x.detach().cpu().numpy(), order)
            out = xp.asarray(np.asarray(host), device=x.device)
        elif namespace.is_torch(xp):
            import torch

            out = _call(torch.special, torch_name, x, order)
        elif namespace.is_cupy(xp):
            import cupyx.scipy.special

            out = _call(cupyx.scipy.special, scipy_name, x, order)
        else:
            out = _on_host(xp, scipy_name, x, _compute_dtype(dtype), order)
        return namespace.astype(xp, out, dtype)

    return impl


# --- derivatives: t * f'(x), in the result's dtype --------------------------------------


def _exp_square(x, sign: int):
    """``exp(sign * x**2)``."""
    square = bind("multiply", x, x)
    return bind("exp", square if sign > 0 else bind("negative", square))


_DERIVATIVES = {  # f'(x), from the operand, the result and the parameters
    "erf": lambda x, out: bind("multiply", 2 / math.sqrt(math.pi), _exp_square(x, -1)),
    "erfc": lambda x, out: bind("multiply", -2 / math.sqrt(math.pi), _exp_square(x, -1)),
    "erf_inv": lambda x, out: bind("multiply", math.sqrt(math.pi) / 2, _exp_square(out, 1)),
    "lgamma": lambda x, out: digamma_p.bind(x),
    "digamma": lambda x, out: polygamma_p.bind(x, order=1),
    "polygamma": lambda x, out, order: polygamma_p.bind(x, order=order + 1),
}


def _jvp_rule(name: str):
    derivative = _DERIVATIVES[name]

    def jvp(primals, out, tangents, **params):
        (x,), (t,) = primals, tangents
        dtype = aval_of(out).dtype
        return bind("multiply", convert(t, dtype), convert(derivative(x, out, **params), dtype))

    return jvp


def _special(name: str) -> Primitive:
    rules = Rules(
        shape=_shape_rule(name),
        impl=_impl_rule(name),
        sharding=broadcasting(),
        jvp=_jvp_rule(name),
        batch=unary_batch(name),
    )
    return Primitive(name, rules)


erf_p = _special("erf")
erfc_p = _special("erfc")
erf_inv_p = _special("erf_inv")
lgamma_p = _special("lgamma")
digamma_p = _special("digamma")
polygamma_p = _special("polygamma")  # parameter ``order``: the derivative of digamma taken
