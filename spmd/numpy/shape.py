"""shape of spmd.numpy (being built)."""

__all__: list[str] = []
