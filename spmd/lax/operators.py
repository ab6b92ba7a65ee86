"""lax's general operators that spmd.numpy's names do not cover: dot_general, broadcast_in_dim,
sorting with keys, top_k, cumulative reductions."""

from __future__ import annotations

__all__: list[str] = []
