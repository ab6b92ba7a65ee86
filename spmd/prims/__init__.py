"""Primitives, one file per family, each primitive with its one Rules record."""
