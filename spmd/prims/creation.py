"""Creation primitives: values made from nothing but parameters, so that a program creates
each device's block where it is needed instead of carrying a constant made when tracing."""

from __future__ import annotations

import numpy as np

from spmd.core.aval import ShapedArray
from spmd.core.primitive import Primitive, Rules
from spmd.prims.namespace import dtype_for
from spmd.sharding.rules import Factors


def _iota_shape(*, size: int, start: int, step: int, dtype: np.dtype) -> ShapedArray:
    return ShapedArray((size,), dtype)


def _iota_impl(xp, *, size: int, start: int, step: int, dtype: np.dtype):
    if xp is np:
        return np.arange(start, start + step * size, step, dtype=dtype)
    return xp.arange(start, start + step * size, step, dtype=dtype_for(xp, dtype))


def _iota_sharding(ins, outs, **params) -> Factors:
    return Factors((), ((("i",),),), {"i": outs[0].shape[0]})


def _iota_block(params, in_shapes, out_shapes, in_dtypes, out_bounds) -> dict:
    ((lo, hi),) = out_bounds[0]
    return {**params, "size": hi - lo, "start": params["start"] + params["step"] * lo}


# ``start + step * i`` for i in range(size): an integer arange, exact in every block.
iota_p = Primitive(
    "iota",
    Rules(
        shape=_iota_shape,
        impl=_iota_impl,
        sharding=_iota_sharding,
        local_params=_iota_block,
        jvp=lambda primals, out, tangents, **params: None,  # no operands: nothing moves it
        batch=lambda args, dims, **params: (iota_p.bind(**params), None),  # the same per member
    ),
)
