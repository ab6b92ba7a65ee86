"""Meshes, partition specs and shardings (re-exports)."""

from spmd.sharding.mesh import AxisType, Mesh, current_mesh, get_mesh, make_mesh, set_mesh, use_mesh
from spmd.sharding.named import MEMORY_KINDS, NamedSharding, Sharding, SingleDeviceSharding
from spmd.sharding.spec import P, PartitionSpec

__all__ = [
    "MEMORY_KINDS",
    "AxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "current_mesh",
    "get_mesh",
    "make_mesh",
    "set_mesh",
    "use_mesh",
]
