"""Meshes, partition specs and shardings (re-exports)."""

from spmd.sharding.abstract_mesh import AbstractMesh, get_abstract_mesh
from spmd.sharding.mesh import AxisType, Mesh, current_mesh, get_mesh, make_mesh, set_mesh, use_mesh
from spmd.sharding.named import MEMORY_KINDS, NamedSharding, Sharding, SingleDeviceSharding
from spmd.sharding.spec import P, PartitionSpec

__all__ = [
    "MEMORY_KINDS",
    "AbstractMesh",
    "AxisType",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "current_mesh",
    "get_abstract_mesh",
    "get_mesh",
    "make_mesh",
    "set_mesh",
    "use_mesh",
]
