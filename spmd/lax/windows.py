"""lax's windowed reductions: reduce_window and the pooling it expresses."""

from __future__ import annotations

__all__: list[str] = []
