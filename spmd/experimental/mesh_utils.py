"""``jax.experimental.mesh_utils``: device grids for ``Mesh``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from spmd.errors import ShardingError
from spmd.sharding.device import Device
from spmd.sharding.device import devices as all_devices
from spmd.sharding.mesh import make_mesh


def create_device_mesh(
    mesh_shape: Sequence[int],
    devices: Sequence[Device] | None = None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """``devices`` (default: all of them) as an array of shape ``mesh_shape``, for
    ``Mesh(grid, axis_names)``. Virtual CPU devices have no topology to follow, so the grid
    is in id order; the two keyword arguments are accepted for JAX code and change nothing.

    Example: ``Mesh(create_device_mesh((4, 2)), ('x', 'y'))``.
    """
    devices = all_devices() if devices is None else list(np.asarray(devices, dtype=object).flat)
    shape = (mesh_shape,) if isinstance(mesh_shape, int) else tuple(mesh_shape)
    if math.prod(shape) != len(devices):
        raise ShardingError(
            f"create_device_mesh: mesh_shape {shape} holds {math.prod(shape)} devices, but "
            f"{len(devices)} devices are offered; choose a shape whose product is "
            f"{len(devices)}, or pass devices=spmd.devices()[:{math.prod(shape)}]."
        )
    names = tuple(f"axis{i}" for i in range(len(shape)))
    return make_mesh(shape, names, devices=devices).devices


__all__ = ["create_device_mesh"]
