"""lax's convolutions: conv_general_dilated and its shorthands."""

from __future__ import annotations

__all__: list[str] = []
