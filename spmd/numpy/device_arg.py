"""``device=``: where a creation function's result lives, as the Array API standard and
``jax.numpy`` spell it (a Device, a Sharding, or None for the default device)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


def takes_device(fn: Callable) -> Callable:
    """``fn`` with a keyword ``device``: None leaves the result where ``fn`` put it (the
    default device); a Device or Sharding moves it there, as ``device_put`` does."""

    @functools.wraps(fn)
    def placed(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if device is None:
            return result
        from spmd.runtime.put import device_put

        return device_put(result, device)

    signature = inspect.signature(fn)
    keyword = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None)
    placed.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), keyword]
    )
    return placed
