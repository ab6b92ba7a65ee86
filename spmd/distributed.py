"""Joining the processes of a job: ``initialize`` connects them through MPI.

Under ``mpiexec -n N`` (or ``srun``) every process calls ``spmd.distributed.initialize()``
before it uses a device. MPI does the wiring: no coordinator address, no socket of ours.
Afterwards ``spmd.devices()`` lists every process's devices, numbered process by process,
and jit, shard_map and pmap span all of them.
"""

from __future__ import annotations

import array
import contextlib
import os
import stat
import sys
import time
import traceback

import numpy as np

from spmd.config import config
from spmd.errors import DistributedError
from spmd.runtime.communicator import set_transport
from spmd.sharding.device import devices_listed, join_processes

_state = {"initialized": False}

_LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "SLURM_NTASKS")


def launched_by_mpi() -> bool:
    """Whether this process looks started by mpiexec or srun (before MPI is loaded)."""
    return any(name in os.environ for name in _LAUNCHER_VARIABLES)


def is_initialized() -> bool:
    return _state["initialized"]


def _processes_sharing_memory(comm) -> int:
    from mpi4py import MPI

    host = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return host.Get_size()
    finally:
        host.Free()


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids=None,
) -> None:
    """Join the other processes of this job through MPI.

    With no arguments it takes the process count and index from MPI; ``num_processes`` and
    ``process_id``, if given, must agree with MPI's. ``coordinator_address`` is accepted for
    JAX compatibility and not needed: MPI connects the processes. Call it once, before the
    first use of a device. Example: ``mpiexec -n 2 python -c "import spmd;
    spmd.distributed.initialize(); print(spmd.devices())"``.
    """
    if _state["initialized"]:
        raise DistributedError(
            "spmd.distributed.initialize() was called twice; call it once, at the start."
        )
    if devices_listed():
        raise DistributedError(
            "spmd.distributed.initialize() came after devices were used; call it first, "
            "before spmd.devices(), a mesh or any array."
        )
    if local_device_ids is not None:
        raise DistributedError(
            "initialize(local_device_ids=...) is not supported: each process contributes "
            "its SPMD_NUM_CPU_DEVICES virtual devices; set that variable per process instead."
        )
    comm = _mpi_world(num_processes)
    size, rank = (1, 0) if comm is None else (comm.Get_size(), comm.Get_rank())
    if num_processes is not None and num_processes != size:
        raise DistributedError(
            f"initialize(num_processes={num_processes}) but MPI started {size} processes; "
            f"launch with mpiexec -n {num_processes}, or leave num_processes out."
        )
    if process_id is not None and process_id != rank:
        raise DistributedError(
            f"initialize(process_id={process_id}) but MPI numbers this process {rank}; leave "
            f"process_id out (MPI assigns it)."
        )
    counts, on_this_host = (config.num_cpu_devices,), 1
    if size > 1:
        from spmd.runtime.mpi import MpiTransport

        transport = MpiTransport(comm)
        mine = np.array([config.num_cpu_devices], np.int64)
        every = np.empty(size, np.int64)
        comm.Allgather(mine, every)
        counts = tuple(int(n) for n in every)
        on_this_host = _processes_sharing_memory(comm)
        set_transport(transport)
        _end_job_on_uncaught_exceptions(comm)
    join_processes(rank, counts, on_this_host)
    _state["initialized"] = True


def _mpi_world(num_processes: int | None):
    """MPI's world communicator, or None when running alone without MPI."""
    try:
        from mpi4py import MPI
    except ImportError:
        if (num_processes or 1) > 1 or launched_by_mpi():
            raise DistributedError(
                f"initialize(num_processes={num_processes}) needs MPI, and mpi4py is not "
                f"installed. Install it with pip install 'spmd[mpi]' and launch with mpiexec "
                f"-n N."
            ) from None
        return None
    return MPI.COMM_WORLD


def _end_job_on_uncaught_exceptions(comm) -> None:
    """An uncaught exception on one process prints its traceback and ends every process,
    instead of leaving the others waiting for it."""
    previous = sys.excepthook

    def hook(kind, value, tb) -> None:
        previous(kind, value, tb)
        sys.stderr.write(
            f"spmd: process {comm.Get_rank()} raised {kind.__name__}; ending all "
            f"{comm.Get_size()} processes.\n"
        )
        _hand_output_to_the_launcher()
        try:
            comm.Abort(1)
        except Exception:
            traceback.print_exc()
            os._exit(1)

    sys.excepthook = hook


def _hand_output_to_the_launcher(limit: float = 5.0) -> None:
    """Flush Python's stdout and stderr, then wait (at most ``limit`` seconds) until the
    launcher has read what this process wrote to them.

    mpiexec reads each process's stdout and stderr from pipes and forwards them; on
    MPI_Abort it exits at once, and what was still in a pipe is lost (hydra's proxy sometimes
    forwards the abort before the traceback written just before it: the job then ends with
    part of the traceback, or none). Output to a terminal or a file needs no wait."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # replaced, or closed
            stream.flush()
    try:
        import fcntl
        import termios
    except ImportError:  # not a POSIX system: nothing to ask the pipes
        return

    def unread(fd: int) -> int:
        """Bytes written to pipe ``fd`` that its reader has not taken (0 if not a pipe)."""
        count = array.array("i", [0])
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return 0
            fcntl.ioctl(fd, termios.FIONREAD, count, True)
        except OSError:  # closed
            return 0
        return count[0]

    deadline = time.monotonic() + limit
    while any(unread(fd) for fd in (1, 2)) and time.monotonic() < deadline:
        time.sleep(0.005)
