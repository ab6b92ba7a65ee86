"""The sampled oracles, run across processes: one suite per MPI job.

    SPMD_NUM_CPU_DEVICES=4 mpiexec -n 2 python -m tests.multiprocess.worker partition
    SPMD_NUM_CPU_DEVICES=2 mpiexec -n 4 python -m tests.multiprocess.worker pmap

(from the repository root; with SPMD_NUM_CPU_DEVICES unset each of N processes contributes
8 / N devices). The single-process tests' meshes of 8 devices then span every process. Each
suite draws its cases with the single-process tests' own samplers (for pmap: from their
functions and parameter lists) and checks them with their own references and tolerances,
on host NumPy inputs that every process holds alike:

- ``partition``: rows of the case table × meshes × random specs (partition_suite.py);
- ``shard_map``: local functions and every collective (shard_map_suite.py);
- ``pmap``: functions and every collective over 1 to 8 devices (pmap_suite.py), run both
  ways by mapped.py;
- ``pmap_nested``: nested pmaps over grids (pmap_nested_suite.py), the same way;
- ``random``: sharded random numbers equal the unsharded ones bit for bit (random_suite.py).

Every process checks its own shards of each result and the whole value gathered
(checks.py), and records its failures (tally.py). At the end the processes compare failure
counts and all exit non-zero if any failed, else each prints ``worker SUITE: N cases passed
on process P of K``. ``--every K`` runs every K-th case (each suite has a default sized for
CI).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence

import numpy as np

import spmd
from spmd.multihost_utils import process_allgather
from tests.multiprocess import (
    partition_suite,
    pmap_nested_suite,
    pmap_suite,
    random_suite,
    shard_map_suite,
)
from tests.multiprocess.tally import Tally, say

GLOBAL_DEVICES = 8  # the single-process tests' meshes need 8 devices

SUITES = {  # name: (module, default --every)
    "partition": (partition_suite, 4),
    "shard_map": (shard_map_suite, 1),
    "pmap": (pmap_suite, 1),
    "pmap_nested": (pmap_nested_suite, 1),
    "random": (random_suite, 1),
}


def initialize() -> None:
    """Join the other processes; unless SPMD_NUM_CPU_DEVICES says otherwise, each brings
    8 / N devices so that the job has the 8 the tests' meshes need."""
    from mpi4py import MPI

    count = MPI.COMM_WORLD.Get_size()
    if "SPMD_NUM_CPU_DEVICES" not in os.environ:
        if GLOBAL_DEVICES % count:
            raise SystemExit(f"run on a divisor of {GLOBAL_DEVICES} processes, not {count}")
        spmd.config.update("num_cpu_devices", GLOBAL_DEVICES // count)
    spmd.distributed.initialize()
    if spmd.device_count() != GLOBAL_DEVICES:
        raise SystemExit(
            f"the suites need {GLOBAL_DEVICES} devices in all, the job has "
            f"{spmd.device_count()}: set SPMD_NUM_CPU_DEVICES to {GLOBAL_DEVICES} / processes"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--every", type=int, help="run every K-th case (default: the suite's)")
    options = parser.parse_args(argv)
    initialize()
    suite, every = SUITES[options.suite]
    tally = Tally(options.every or every)
    here, count = spmd.process_index(), spmd.process_count()
    start = time.perf_counter()
    suite.run(tally)
    ran = tally.passed + len(tally.failures)
    failed = process_allgather(np.array([len(tally.failures)]), tiled=True)  # per process
    name = f"worker {options.suite}"
    if here == 0:
        say(
            f"{name}: {ran} cases (every {tally.every}) in "
            f"{time.perf_counter() - start:.1f} s; covered {dict(tally.covered)}"
        )
    if failed.any():
        raise SystemExit(
            f"{name}: failures per process {failed.tolist()}; process {here} "
            f"failed {len(tally.failures)} of {ran} cases:\n" + "\n".join(tally.failures)
        )
    say(f"{name}: {tally.passed} cases passed on process {here} of {count}")


if __name__ == "__main__":
    main()
