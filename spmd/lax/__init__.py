"""spmd.lax: operations below spmd.numpy: sharding constraints, collectives, dynamic slices."""

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
from spmd.lax.constraints import reshard, with_sharding_constraint
from spmd.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)

__all__ = [
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
    "reshard",
    "with_sharding_constraint",
]
