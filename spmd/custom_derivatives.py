"""JAX's ``jax.custom_derivatives`` names: ``custom_jvp``, ``custom_vjp`` and ``SymbolicZero``
(what a ``defjvp(..., symbolic_zeros=True)`` rule sees for a zero tangent)."""

from __future__ import annotations

from spmd.transforms.custom_derivatives import custom_jvp, custom_vjp
from spmd.transforms.custom_layout import SymbolicZero

__all__ = ["SymbolicZero", "custom_jvp", "custom_vjp"]
