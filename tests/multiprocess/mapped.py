"""A pmap case (nested or not) on global NumPy arguments, and running it both ways across
processes: eagerly, each process passing its own rows of the mapped axis (as in JAX), and
under jit on the global arguments."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import spmd
from spmd.multihost_utils import process_allgather
from tests.multiprocess.checks import check_shards, device_order, gathered, spans_every_process
from tests.multiprocess.tally import Tally
from tests.pmap_reference import assert_close


@dataclass
class Mapped:
    """A pmap (nested or not) on global NumPy arguments, and NumPy's results."""

    label: str
    pmap: Callable  # devices=None -> the pmapped function (devices= goes to the outermost pmap)
    args: tuple
    in_axes: tuple  # each argument's outermost mapped axis, or None
    out_axes: tuple  # each result's outermost mapped axis
    want: tuple
    grid: tuple[int, ...]  # the sizes of the mapped axes, outermost first
    family: str  # what it exercises, for the coverage counts


def nested_pmap(body: Callable, names: Sequence[str]) -> Callable:
    """pmaps over ``names``, outermost first, waiting for the outermost's ``devices``."""
    for name in reversed(names[1:]):
        body = spmd.pmap(body, name)
    return functools.partial(spmd.pmap, body, names[0])


def run_mapped(tally: Tally, case: Mapped) -> None:
    """``case`` eagerly with each process passing its rows of the outermost axis (when they
    divide evenly and fit its devices), and under jit on the global arguments: on the first
    devices if they span every process, else on devices dealt out to the processes in turn
    (unevenly when the processes do not divide the grid, on only some of them when the grid
    is smaller than the job)."""
    size = math.prod(case.grid)
    rows, left = divmod(case.grid[0], spmd.process_count())
    runs = []  # (how, run, arguments)
    if not left and rows * (size // case.grid[0]) <= spmd.local_device_count():
        runs.append(("rows per process", run_local_rows, ()))
    if spans_every_process(spmd.devices()[:size]):
        runs.append(("under jit", run_under_jit, (None,)))
    else:
        runs.append(("under jit on dealt devices", run_under_jit, (dealt_devices()[:size],)))
    tally.covered[case.family] += 1
    for how, run, arguments in runs:
        tally.covered[f"pmap {how}"] += 1
        tally.check(f"{case.label}, {how}", run, case, *arguments)


def dealt_devices() -> list:
    """Every process's first device, then every process's second, and so on."""
    count, local = spmd.process_count(), spmd.local_device_count()
    return [spmd.local_devices(p)[i] for i in range(local) for p in range(count)]


def results_of(out) -> list:
    return list(out) if isinstance(out, tuple) else [out]


def run_local_rows(case: Mapped) -> None:
    """Process p passes rows [p * r, (p + 1) * r) of the outermost mapped axis (JAX's
    multi-process pmap) and gets back its rows of each result, on its own devices."""
    count, here = spmd.process_count(), spmd.process_index()
    rows = case.grid[0] // count
    mine = range(here * rows, (here + 1) * rows)
    local = [
        a if ax is None else np.take(a, mine, axis=ax)
        for a, ax in zip(case.args, case.in_axes, strict=True)
    ]
    results = results_of(case.pmap()(*local))
    for result in results:
        assert all(d.process_index == here for d in device_order(result.sharding))
        check_shards(result, np.asarray(result))
    every = process_allgather([np.asarray(r) for r in results])  # each: (processes, ...)
    for stacked_rows, axis, want in zip(every, case.out_axes, case.want, strict=True):
        assert_close(np.concatenate(list(stacked_rows), axis=axis), want)


def run_under_jit(case: Mapped, devices: list | None) -> None:
    """The pmap inside jit on the global arguments: it maps over devices of several
    processes, and its results are global Arrays."""
    results = results_of(spmd.jit(case.pmap(devices=devices))(*case.args))
    for got, want in zip(gathered(results), case.want, strict=True):
        assert_close(got, want)
