"""``out_sharding=``: where a function's result is laid out, as JAX's spmd.numpy-like
functions take it (dot, matmul, einsum, reshape, creation functions)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from spmd.runtime.constrain import constrain


def takes_out_sharding(fn: Callable) -> Callable:
    """``fn`` with a keyword ``out_sharding`` (a sharding, or a PartitionSpec under
    set_mesh): its result is moved there eagerly, or pinned there inside jit."""

    @functools.wraps(fn)
    def placed(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if out_sharding is None:
            return result
        return constrain(result, out_sharding, f"spmd.numpy.{fn.__name__}(out_sharding=...)")

    return placed
