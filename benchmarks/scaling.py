"""Device counts and cores for the benchmarks, and the scaling table across device counts.

A benchmark calls ``configure()`` before it imports spmd or JAX: ``--devices N`` gives
both libraries N virtual CPU devices (8 by default), ``--cores K`` lets the process run on
K cores only, ``--json`` prints the measured rows as JSON, and ``--scaling`` runs the
benchmark again at 1, 2, 4, 8 and 16 devices, one process each, and prints each library's
time per device count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

COUNTS = (1, 2, 4, 8, 16)


def configure(default_devices: int = 8) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=default_devices)
    parser.add_argument("--cores", type=int, help="run on this many cores only")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--scaling", action="store_true", help=f"run at {COUNTS} devices")
    args = parser.parse_args()
    if args.cores is not None:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])
    os.environ["SPMD_NUM_CPU_DEVICES"] = str(args.devices)
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    return args


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def report(args: argparse.Namespace, script: str, measure, print_rows) -> None:
    """Print ``measure()``'s rows (row → library → ms) as a table, as JSON, or per device
    count (``--scaling``)."""
    if args.scaling:
        print_scaling(script, args.cores)
    elif args.json:
        print(json.dumps(measure()))
    else:
        print_rows(measure())
        print(f"devices: {args.devices}, cores: {cores()}")


def print_scaling(script: str, cores_wanted: int | None) -> None:
    limit = [] if cores_wanted is None else ["--cores", str(cores_wanted)]
    tables = {}
    for count in COUNTS:
        command = [sys.executable, script, "--json", "--devices", str(count), *limit]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        tables[count] = json.loads(done.stdout.splitlines()[-1])
    rows = list(dict.fromkeys(row for table in tables.values() for row in table))
    libraries = list(dict.fromkeys(lib for t in tables.values() for r in t.values() for lib in r))
    print(
        f"ms per call at {', '.join(map(str, COUNTS))} devices, on {cores_wanted or cores()} cores"
    )
    print(f"{'':32} {'':6}" + "".join(f"{count:>10}" for count in COUNTS))
    for row in rows:
        for lib in libraries:
            times = [tables[count].get(row, {}).get(lib) for count in COUNTS]
            if all(t is None for t in times):
                continue
            cells = "".join(f"{t:10.3f}" if t is not None else f"{'-':>10}" for t in times)
            print(f"{row:32} {lib:6}{cells}")
