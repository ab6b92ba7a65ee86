"""``jax.experimental.enable_x64`` and ``disable_x64``: the x64 mode for a ``with`` block.

Inside ``with spmd.experimental.disable_x64():`` spmd follows JAX's 32-bit dtype rules
(spmd/core/dtypes.py) for the code the block runs, in this thread; the mode set by
``spmd.config.update("jax_enable_x64", ...)`` returns after the block.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from spmd.config import config


def enable_x64(new_val: bool = True) -> AbstractContextManager[None]:
    """64-bit dtypes (NumPy's rules, ``new_val=True``) or not for the block."""
    return config.overriding("jax_enable_x64", new_val)


def disable_x64() -> AbstractContextManager[None]:
    """JAX's 32-bit dtypes for the block: float64 data and defaults become float32, int64
    int32, and so on."""
    return config.overriding("jax_enable_x64", False)


__all__ = ["disable_x64", "enable_x64"]
