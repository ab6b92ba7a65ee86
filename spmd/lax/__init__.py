"""spmd.lax: operations below spmd.numpy: sharding constraints and collectives."""

from spmd.lax.collectives import (
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)
from spmd.lax.constraints import with_sharding_constraint

__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
    "with_sharding_constraint",
]
