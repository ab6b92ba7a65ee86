"""spmd.lax: operations below spmd.numpy: sharding constraints, collectives, dynamic slices,
loops; spmd.lax.linalg: decompositions and triangular solves."""

from spmd.lax import linalg
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
from spmd.lax.control import (
    cond,
    fori_loop,
    map,
    scan,
    select,
    stop_gradient,
    switch,
    while_loop,
)
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
    "cond",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "fori_loop",
    "linalg",
    "map",
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
    "select",
    "stop_gradient",
    "switch",
    "while_loop",
    "with_sharding_constraint",
]
