"""Meshes, partition specs and shardings (re-exports), and ``reshard`` where JAX keeps it."""

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
    "reshard",
    "set_mesh",
    "use_mesh",
]


def __getattr__(name: str):
    # jax.sharding.reshard is a traced operation, so it lives in spmd.lax above this package;
    # importing it on first use keeps this package free of the layers built on it.
    if name == "reshard":
        from spmd.lax.resharding import reshard

        return reshard
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
