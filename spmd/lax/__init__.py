"""spmd.lax: operations below spmd.numpy: sharding constraints, collectives, dynamic slices,
loops."""

from spmd.lax.collectives import (
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pcast,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
    pvary,
)
from spmd.lax.control import fori_loop, scan, stop_gradient
from spmd.lax.resharding import reshard, with_sharding_constraint
from spmd.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
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
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "fori_loop",
    "pcast",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
    "pvary",
    "reshard",
    "scan",
    "stop_gradient",
    "with_sharding_constraint",
]
