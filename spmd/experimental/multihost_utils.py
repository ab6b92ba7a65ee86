"""``jax.experimental.multihost_utils``: the same functions as ``spmd.multihost_utils``."""

from spmd.multihost_utils import broadcast_one_to_all, process_allgather, sync_global_devices

__all__ = ["broadcast_one_to_all", "process_allgather", "sync_global_devices"]
