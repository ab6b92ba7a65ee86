"""The sampled oracles, run across processes: one suite per MPI job.

    SPMD_NUM_CPU_DEVICES=4 mpiexec -n 2 python -m tests.multiprocess.worker partition
    SPMD_NUM_CPU_DEVICES=2 mpiexec -n 4 python -m tests.multiprocess.worker pmap

(from the repository root; with SPMD_NUM_CPU_DEVICES unset each of N processes contributes
8 / N devices). The single-process tests' meshes of 8 devices then span every process. Each
suite draws its cases with the single-process tests' own samplers (for pmap: from their
functions and parameter lists) and checks them with their own references and tolerances,
on host NumPy inputs that every process holds alike:

- ``partition``: rows of the case table × meshes × random specs (tests/test_partition.py);
- ``shard_map``: local functions and every collective (tests/test_shard_map.py);
- ``pmap``: functions and every collective over 1 to 8 devices (tests/test_pmap.py), with
  the collectives checked by tests/test_shard_map.py's coordinate-loop reference;
- ``pmap_nested``: nested pmaps over grids (tests/test_pmap_nested.py), the same way;
- ``random``: sharded random numbers equal the unsharded ones bit for bit
  (tests/test_random_sharded.py).

Results are read the multi-process way: every process checks that it holds exactly its
devices' shards, at the indices the reference layout gives, each equal to its slice of the
whole value gathered with ``process_allgather``, and compares that value with the reference.
pmap runs both ways: eagerly, each process passing its own rows of the mapped axis (as in
JAX), and under jit on the global arguments. Every process checks its own results; at the end
the processes compare failure counts and all exit non-zero if any failed, else each prints
``worker SUITE: N cases passed on process P of K``. ``--every K`` runs every K-th case (each
suite has a default sized for CI); ``--known-bugs`` also runs the cases skipped for an open
spmd bug (KNOWN_BUGS).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import sys
import time
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.debug import count_collectives
from spmd.multihost_utils import process_allgather
from tests import test_partition, test_pmap, test_pmap_nested, test_random_sharded
from tests import test_shard_map as shard_map_tests
from tests.cases import FAMILIES, assert_matches
from tests.pmap_reference import DTYPES, assert_close, mapped_reference, sample, take

GLOBAL_DEVICES = 8  # the single-process tests' meshes need 8 devices

KNOWN_BUGS = {
    "local-array-put": (
        "device_put of an Array each process made on its own first device (alike on every "
        "process) onto a mesh spanning processes sends blocks no process receives; a later "
        "exchange reads them, and process_allgather returns wrong values"
    ),
    "some-processes": (
        "work on the devices of only some processes fails on the others: there device_put "
        "raises ValueError('Too few leaves for PyTreeSpec'), and jit raises KeyError in the "
        "executor (before: joined the agreement on the program, confusing the next one)"
    ),
}


# ------------------------------------------------------------------ reading results


def spans_every_process(devices) -> bool:
    return {d.process_index for d in devices} == set(range(spmd.process_count()))


def device_order(sharding) -> list:
    if isinstance(sharding, NamedSharding):
        return list(sharding.mesh.devices.flat)
    return list(sharding.device_set)


def reference_index(sharding, device, shape) -> tuple[slice, ...]:
    """Where ``device``'s block of a ``shape`` value lies, by tests/test_shard_map.py's
    coordinate reference (ceil-sized blocks, mesh axes major to minor)."""
    if not isinstance(sharding, NamedSharding):
        return tuple(slice(0, n) for n in shape)
    mesh = sharding.mesh
    coord = next(c for c, d in np.ndenumerate(mesh.devices) if d == device)
    return shard_map_tests.block_slices(mesh, coord, sharding.spec, shape)


def same_index(a, b, shape) -> bool:
    return all(
        range(*x.indices(n)) == range(*y.indices(n)) for x, y, n in zip(a, b, shape, strict=True)
    )


def check_shards(result, whole: np.ndarray, values: bool = True) -> None:
    """This process holds exactly its devices' shards of ``result``, in the sharding's device
    order, each at its reference index and (if ``values``) equal to that slice of ``whole``."""
    here = spmd.process_index()
    mine = [d for d in device_order(result.sharding) if d.process_index == here]
    shards = result.addressable_shards
    held = [s.device for s in shards]
    assert held == mine, f"process {here} holds shards on {held}, its devices are {mine}"
    for shard in shards:
        index = reference_index(result.sharding, shard.device, result.shape)
        assert same_index(shard.index, index, result.shape), (shard.device, shard.index, index)
        data = np.asarray(shard.data)
        assert data.shape == whole[index].shape, (shard.device, data.shape, whole[index].shape)
        if values:
            np.testing.assert_array_equal(data, whole[index], err_msg=str(shard.device))


def gathered(results: Sequence, values: bool = True) -> list[np.ndarray]:
    """The whole value of each result Array, on every process, after checking its shards
    here. Every process must call it alike: ``process_allgather`` is a collective."""
    wholes = process_allgather(list(results))
    for result, whole in zip(results, wholes, strict=True):
        check_shards(result, whole, values)
    return wholes


def on_this_process(value: np.ndarray):
    """``value`` as an Array on this process's first device, for ``assert_matches``."""
    return spmd.device_put(value, spmd.local_devices()[0])


def parameters(test) -> list[dict]:
    """The argument sets a test's ``pytest.mark.parametrize`` marks give it."""
    sets: list[dict] = [{}]
    for mark in getattr(test, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, rows = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = [r.values if hasattr(r, "marks") else r for r in rows]  # pytest.param(...)
        rows = [r if len(names) > 1 else (r,) for r in rows]
        sets = [{**s, **dict(zip(names, r, strict=True))} for s in sets for r in rows]
    return sets


def seeded(*key) -> np.random.Generator:
    """A generator from ``key`` alone (not ``hash``, which differs between processes)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ------------------------------------------------------------------ the tally


@dataclass
class Tally:
    """Cases passed and failed on this process; what was skipped, and what was covered."""

    suite: str
    every: int
    known_bugs: bool
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    covered: Counter = field(default_factory=Counter)

    def check(self, label: str, run: Callable, *args) -> None:
        """Run one case; an error is recorded (and shown at once) and the suite goes on."""
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                run(*args)
        except Exception as error:
            message = f"{label}: {type(error).__name__}: {error}"
            self.failures.append(message)
            say(f"[process {spmd.process_index()}] FAILED {message}")
        else:
            self.passed += 1

    def sampled(self, index: int, offset: int = 0) -> bool:
        return (index + offset) % self.every == 0

    def skip_for(self, bug: str) -> bool:
        """Whether to skip a case that meets the open spmd bug ``bug`` (and count it)."""
        if self.known_bugs:
            return False
        self.skipped[bug] += 1
        return True


# ------------------------------------------------------------------ partition


def partition_suite(tally: Tally) -> None:
    """Rows of the case table on every mesh with random specs, as
    tests/test_partition.py::test_rows_match_numpy_on_sharded_inputs draws them."""
    for m, mesh_id in enumerate(test_partition.MESHES):
        mesh = test_partition.mesh_of(mesh_id)
        for family in FAMILIES:
            for i, (case, draw) in enumerate(test_partition.sampled_rows(mesh_id, family)):
                if not tally.sampled(i, m):
                    continue
                if not spans_every_process(mesh.devices.flat) and tally.skip_for("some-processes"):
                    continue
                count_row(tally, mesh, family, draw)
                tally.check(f"mesh {mesh_id} {case.id} {draw}", run_row, case, draw, mesh)


def count_row(tally: Tally, mesh, family: str, draw) -> None:
    tally.covered[family] += 1
    found = [
        test_partition.splits(mesh, x.shape, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
        if not on_host
    ]
    tally.covered["uneven"] += any(u for u, _ in found)
    tally.covered["empty blocks"] += any(e for _, e in found)
    tally.covered["out_shardings"] += draw.out is not None


def run_row(case, draw, mesh) -> None:
    """tests/test_partition.py's run_sharded_row and assert_valid_array, reading the results
    across processes."""
    args = [
        x if on_host else test_partition.put(x, mesh, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
    ]
    target = None if draw.out is None else NamedSharding(mesh, draw.out)
    result = spmd.jit(lambda *a: case.fn(snp, *a), out_shardings=target)(*args)
    scale = test_partition.tolerance_scale(draw.expected)
    assert_matches(result, draw.expected, values=False)  # container, dtypes and shapes
    results, expected = test_partition.leaves(result), test_partition.leaves(draw.expected)
    wholes = gathered(results, case.values)
    on_mesh = draw.out is not None or not all(draw.host)
    for got, whole, want in zip(results, wholes, expected, strict=True):
        want = np.asarray(want)
        if on_mesh:
            assert isinstance(got.sharding, NamedSharding), got.sharding
            assert got.sharding.mesh == mesh, got.sharding
        assert_matches(on_this_process(whole), want, case.values, scale)
        if case.values:
            for shard in got.addressable_shards:
                assert_matches(shard.data, want[shard.index], True, scale)
    if draw.out is not None:
        assert result.sharding.spec.dims(result.ndim) == draw.out.dims(result.ndim)


# ------------------------------------------------------------------ shard_map


def shard_map_suite(tally: Tally) -> None:
    """tests/test_shard_map.py's sampled local functions and collectives."""
    for i, param in enumerate(shard_map_tests.local_cases(60)):
        if tally.sampled(i):
            tally.covered[f"local {param.values[3]}"] += 1
            tally.check(f"local {param.id}", run_local_function, *param.values)
    for i, param in enumerate(shard_map_tests.collective_cases(120)):
        if tally.sampled(i):
            name, params, reduce_first = param.values[3:]
            tally.covered[name] += 1
            tally.covered["uneven"] += int(reduce_first)
            tally.check(f"collective {param.id} {params}", run_collective, *param.values)


def run_local_function(mesh_key, shape, spec, name) -> None:
    mesh = shard_map_tests.mesh_of(mesh_key)
    rng = seeded(shape, name)  # the test seeds with hash(), which varies between processes
    x = rng.integers(-5, 9, size=shape).astype(np.float32)
    if name == "two_args":
        y = rng.integers(-5, 9, size=shape).astype(np.float32)
        f = spmd.shard_map(lambda a, b: a * b - a, mesh, in_specs=(spec, spec), out_specs=spec)
        got = f(x, y)
        blocks = shard_map_tests.device_blocks(mesh, [spec, spec], [x, y])
        want = shard_map_tests.assemble(mesh, spec, {c: a * b - a for c, (a, b) in blocks.items()})
    else:
        ours, oracle = shard_map_tests.LOCAL_FUNCTIONS[name]
        got = spmd.shard_map(ours, mesh, in_specs=spec, out_specs=spec)(x)
        blocks = shard_map_tests.device_blocks(mesh, [spec], [x])
        want = shard_map_tests.assemble(mesh, spec, {c: oracle(b) for c, (b,) in blocks.items()})
    assert isinstance(got, spmd.Array)
    assert got.sharding == NamedSharding(mesh, spec)
    (whole,) = gathered([got])
    np.testing.assert_array_equal(whole, want)


def run_collective(mesh_key, shape, spec, name, params, reduce_first) -> None:
    mesh = shard_map_tests.mesh_of(mesh_key)
    everyone = tuple(mesh.axis_names)
    x = np.random.default_rng(len(shape) + 7 * sum(shape)).integers(-9, 10, size=shape)
    x = x.astype(np.float64)

    def pre(b):
        return b.sum(axis=0) if reduce_first else b * 3 - 1

    def body(b):
        return shard_map_tests.call_collective(name, pre(b), params)[None]

    result = spmd.shard_map(body, mesh, in_specs=spec, out_specs=P(everyone))(x)
    (got,) = gathered([result])
    blocks = shard_map_tests.device_blocks(mesh, [spec], [x])
    values = {c: pre(b) for c, (b,) in blocks.items()}
    outs = shard_map_tests.reference_collective(mesh, name, params, values)
    if name == "axis_index":
        outs = {c: values[c] + outs[c] for c in values}
    want = np.stack([outs[c] for c in shard_map_tests.coords_of(mesh)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ------------------------------------------------------------------ pmap


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


def run_mapped(tally: Tally, case: Mapped) -> None:
    """``case`` eagerly with each process passing its rows of the outermost axis (when they
    divide evenly and fit its devices), and under jit on the global arguments: on the first
    devices if they span every process, else on devices dealt out to the processes in turn
    (unevenly, when the processes do not divide the grid)."""
    count, inner = spmd.process_count(), math.prod(case.grid[1:])
    rows, left = divmod(case.grid[0], count)
    size = math.prod(case.grid)
    runs = []  # (how, run, arguments)
    if not left and rows * inner <= spmd.local_device_count():
        runs.append(("rows per process", run_local_rows, ()))
    if spans_every_process(spmd.devices()[:size]):
        runs.append(("under jit", run_under_jit, (None,)))
    elif spans_every_process(dealt_devices()[:size]):
        runs.append(("under jit on dealt devices", run_under_jit, (dealt_devices()[:size],)))
    elif not tally.skip_for("some-processes"):
        runs.append(("under jit", run_under_jit, (None,)))
    tally.covered[case.family] += bool(runs)
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


def pmap_suite(tally: Tally) -> None:
    """tests/test_pmap.py's sampled functions, and every collective of tests/test_shard_map.py
    over 1 to 8 devices, checked by its coordinate-loop reference."""
    cases = [*pmap_function_cases(), *collective_cases(lambda n: [(n,)], ("i",))]
    for i, case in enumerate(cases):
        if tally.sampled(i):
            run_mapped(tally, case)


def pmap_function_cases() -> Iterator[Mapped]:
    """tests/test_pmap.py's FUNCTIONS on every mapped size and dtype, with random in_axes
    and out_axes, against its mapped_reference (a NumPy loop over the mapped index)."""
    for (name, (body, reference, weighted)), dtype, n in itertools.product(
        test_pmap.FUNCTIONS.items(), DTYPES, range(1, GLOBAL_DEVICES + 1)
    ):
        rng = seeded("function", name, np.dtype(dtype).name, n)
        in_axis = int(rng.choice([0, 1, 2, -1, -2, -3]))
        shape = list(test_pmap.SLICE_SHAPE)
        shape.insert(in_axis % 3, n)
        args, in_axes = [sample(rng, shape, dtype)], [in_axis]
        if weighted:
            args.append(sample(rng, (4, 5), dtype))
            in_axes.append(None)
        one = reference(*[take(a, 0, ax) for a, ax in zip(args, in_axes, strict=True)])
        out_axis = int(rng.integers(-(np.ndim(one) + 1), np.ndim(one) + 1))
        f = functools.partial(spmd.pmap, body, "i", in_axes=tuple(in_axes), out_axes=out_axis)
        want = mapped_reference(reference, args, in_axes, out_axis, n)
        label = f"pmap {name} n={n} {np.dtype(dtype).name} in_axes={in_axes} out_axes={out_axis}"
        yield Mapped(label, f, tuple(args), tuple(in_axes), (out_axis,), (want,), (n,), name)


def collective_cases(grids: Callable, names: tuple[str, ...]) -> Iterator[Mapped]:
    """Every collective of tests/test_shard_map.py over random axes of each grid, with random
    parameters drawn by its collective_params, on a nested pmap over ``names``."""
    for n in range(1, GLOBAL_DEVICES + 1):
        for grid, name in itertools.product(grids(n), shard_map_tests.COLLECTIVES):
            sizes = dict(zip(names, grid, strict=True))
            rng = seeded("collective", grid, name)
            block = block_shape(rng, math.prod(grid))
            with registered_grid(sizes) as key:
                params = shard_map_tests.collective_params(rng, name, key, block)
            if params is not None:
                yield grid_collective(sizes, name, params, sample(rng, (*grid, *block), np.float64))


def block_shape(rng, group: int) -> tuple[int, ...]:
    """1 to 3 dimensions, one of them with room to split over any group of the grid."""
    ndim = int(rng.integers(1, 4))
    wide = int(rng.integers(ndim))
    return tuple(
        group * int(rng.choice((1, 2))) if d == wide else int(rng.choice((1, 2, 3)))
        for d in range(ndim)
    )


class registered_grid:
    """tests/test_shard_map.py's MESHES with a pmap grid added while drawing parameters, so
    that its collective_params draws them for that grid (in this process only)."""

    def __init__(self, sizes: dict[str, int]) -> None:
        self.key = f"pmap grid {sizes}"
        self.entry = (tuple(sizes.values()), tuple(sizes))

    def __enter__(self) -> str:
        shard_map_tests.MESHES[self.key] = self.entry
        return self.key

    def __exit__(self, *exc) -> None:
        del shard_map_tests.MESHES[self.key]


def reference_grid(sizes: dict[str, int]) -> SimpleNamespace:
    """What tests/test_shard_map.py's reference reads of a mesh: its axes and their sizes."""
    grid = tuple(sizes.values())
    return SimpleNamespace(devices=np.empty(grid), shape=sizes, axis_names=tuple(sizes))


def nested_pmap(body: Callable, names: Sequence[str]) -> Callable:
    """pmaps over ``names``, outermost first, waiting for the outermost's ``devices``."""
    for name in reversed(names[1:]):
        body = spmd.pmap(body, name)
    return functools.partial(spmd.pmap, body, names[0])


def grid_collective(sizes: dict[str, int], name: str, params: dict, x: np.ndarray) -> Mapped:
    """``name`` on each device's ``x[coordinate] * 3 - 1`` over the grid ``sizes``."""
    grid, names = tuple(sizes.values()), tuple(sizes)
    f = nested_pmap(lambda v: shard_map_tests.call_collective(name, v * 3 - 1, params), names)
    coords = list(itertools.product(*map(range, grid)))
    values = {c: x[c] * 3 - 1 for c in coords}
    outs = shard_map_tests.reference_collective(reference_grid(sizes), name, params, values)
    if name == "axis_index":
        outs = {c: values[c] + outs[c] for c in coords}
    want = np.stack([outs[c] for c in coords]).reshape(*grid, *np.shape(outs[coords[0]]))
    return Mapped(f"{name} over {sizes} {params}", f, (x,), (0,), (0,), (want,), grid, name)


# ------------------------------------------------------------------ nested pmap


def pmap_nested_suite(tally: Tally) -> None:
    """Nested pmaps over tests/test_pmap_nested.py's grids: every collective over random
    axes of 2- and 3-level grids, nested in_axes and out_axes, and work between the levels."""
    grids = [(p["rows"], p["cols"]) for p in parameters(
        test_pmap_nested.test_nested_psum_over_both_axes_and_over_the_outer_axis_only
    )]  # fmt: skip
    cases = [
        *collective_cases(lambda n: [g for g in grids if math.prod(g) == n], ("rows", "cols")),
        *collective_cases(lambda n: [(2, 2, 2)] if n == 8 else [], ("a", "b", "c")),
        *grid_function_cases(grids),
        *nested_axes_cases(),
    ]
    for i, case in enumerate(cases):
        if tally.sampled(i):
            run_mapped(tally, case)


def grid_function_cases(grids) -> Iterator[Mapped]:
    """An elementwise body reading both axis indices (test_chained_nested_pmaps_on_any_grid),
    against tests/test_pmap_nested.py's grid_reference."""
    for rows, cols in grids:
        x = np.arange(rows * cols * 3, dtype=np.float64).reshape(rows, cols, 3)
        body = lambda v: v * 2 + spmd.lax.axis_index("cols") - spmd.lax.axis_index("rows")  # noqa: E731
        want = test_pmap_nested.grid_reference(lambda r, c, v: v * 2 + c - r, x, rows, cols)
        f = nested_pmap(body, ("rows", "cols"))
        label = f"axis indices on {rows}x{cols}"
        yield Mapped(label, f, (x,), (0,), (0,), (want,), (rows, cols), "axis indices")


def nested_axes_cases() -> Iterator[Mapped]:
    """test_nested_out_axes's pairs, an inner pmap over axis 1 with a broadcast weight
    (test_inner_pmap_with_in_axes_1_and_a_broadcast_argument), and outer work around an
    inner pmap (test_outer_function_computes_between_the_two_pmaps)."""
    lax = spmd.lax
    for rows, cols in ((2, 4), (4, 2)):
        x = np.arange(rows * cols * 3, dtype=np.float64).reshape(rows, cols, 3)
        for p in parameters(test_pmap_nested.test_nested_out_axes):
            inner_out, outer_out = p["inner_out"], p["outer_out"]
            inner = spmd.pmap(lambda v: v + lax.axis_index("cols"), "cols", out_axes=inner_out)
            f = functools.partial(spmd.pmap, inner, "rows", out_axes=outer_out)
            per_row = [np.stack([x[r, c] + c for c in range(cols)], inner_out) for r in range(rows)]
            want = np.stack(per_row, axis=outer_out)
            label = f"nested out_axes ({inner_out}, {outer_out}) on {rows}x{cols}"
            yield Mapped(label, f, (x,), (0,), (outer_out,), (want,), (rows, cols), "out_axes")

        rng = seeded("in_axes", rows, cols)
        y, w = sample(rng, (rows, 5, cols), np.int32), sample(rng, (rows, 5), np.int32)
        inner = spmd.pmap(lambda v, u: v * u + lax.axis_index("rows"), "cols", in_axes=(1, None))
        f = functools.partial(spmd.pmap, inner, "rows")
        want = np.stack(
            [np.stack([y[r, :, c] * w[r] + r for c in range(cols)]) for r in range(rows)]
        )
        label = f"inner in_axes=1, weight varying over rows, on {rows}x{cols}"
        yield Mapped(label, f, (y, w), (0, 0), (0,), (want,), (rows, cols), "inner in_axes")

        z = sample(rng, (rows, cols, 3), np.float64)
        inner = spmd.pmap(lambda v: v * lax.axis_index("cols") + lax.psum(v, "rows"), "cols")
        f = functools.partial(spmd.pmap, outer_work(inner), "rows")
        by_col = z.sum(axis=0) * 2
        want = np.stack([
            sum(z[r, c] * 2 * c + by_col[c] for c in range(cols)) - z[r, 0] for r in range(rows)
        ])  # fmt: skip
        label = f"outer work on {rows}x{cols}"
        yield Mapped(label, f, (z,), (0,), (0,), (want,), (rows, cols), "outer work")


def outer_work(inner: Callable) -> Callable:
    return lambda block: inner(block * 2).sum(axis=0) - block[0]


# ------------------------------------------------------------------ random


def random_suite(tally: Tally) -> None:
    """tests/test_random_sharded.py's cases: each sampler, shape, mesh and spec computes its
    blocks with no collective, equal bit for bit to the unsharded numbers. The key goes in
    as the test puts it (replicated on the mesh, here from host NumPy data, which every
    process holds alike) and as the Array that spmd.random.key made on this process."""
    for i, param in enumerate(test_random_sharded.CASES):
        if tally.sampled(i):
            tally.covered[param.values[2]] += 1
            tally.check(f"random {param.id}", run_random, *param.values, key_arrays(tally))
    for mesh_id in test_random_sharded.MESHES:
        label = f"random out_shardings on {mesh_id}"
        tally.check(label, run_random_out_shardings, mesh_id, key_arrays(tally))


def key_arrays(tally: Tally) -> bool:
    """Whether to put the key Array itself on the mesh too (spmd bug local-array-put)."""
    return not tally.skip_for("local-array-put")


def placed_keys(key, mesh, with_key_array: bool) -> list:
    replicated = NamedSharding(mesh, P())
    keys = [spmd.device_put(np.asarray(key), replicated), key]
    return [*keys, spmd.device_put(key, replicated)] if with_key_array else keys


def run_random(mesh_id, shape, sampler, with_key_array: bool) -> None:
    mesh = spmd.make_mesh(*test_random_sharded.MESHES[mesh_id])
    draw = test_random_sharded.SAMPLERS[sampler]
    key = spmd.random.key(42)
    expected = np.asarray(draw(key, shape))  # unsharded, on this process's first device
    for spec, k in itertools.product(
        test_random_sharded.specs_for(mesh, len(shape)), placed_keys(key, mesh, with_key_array)
    ):
        target = NamedSharding(mesh, spec)

        def f(k, target=target):
            return spmd.lax.with_sharding_constraint(draw(k, shape), target)

        with count_collectives() as ran:
            result = spmd.jit(f)(k)
        assert ran.total == 0, (spec, dict(ran))
        assert result.sharding == target
        (whole,) = gathered([result])
        test_random_sharded.assert_same_bits(whole, expected)
        for shard in result.addressable_shards:
            test_random_sharded.assert_same_bits(shard.data, expected[shard.index])


def run_random_out_shardings(mesh_id, with_key_array: bool) -> None:
    """test_out_shardings_take_blocks_of_the_numbers_with_no_collective on one mesh."""
    shape, names = test_random_sharded.MESHES[mesh_id]
    mesh = spmd.make_mesh(shape, names)
    key = spmd.random.key(7)
    expected = np.asarray(spmd.random.uniform(key, (16, 8)))
    target = NamedSharding(mesh, P(names[-1]))
    f = spmd.jit(lambda k: spmd.random.uniform(k, (16, 8)), out_shardings=target)
    for k in placed_keys(key, mesh, with_key_array):
        with count_collectives() as ran:
            result = f(k)
        assert ran.total == 0 and result.sharding == target
        (whole,) = gathered([result])
        test_random_sharded.assert_same_bits(whole, expected)


# ------------------------------------------------------------------ main

SUITES = {  # name: (run, default --every)
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


def say(line: str) -> None:
    """Print ``line`` in one write, so that mpiexec does not interleave it with others."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("--every", type=int, help="run every K-th case (default: the suite's)")
    parser.add_argument("--known-bugs", action="store_true", help="run the cases of KNOWN_BUGS")
    options = parser.parse_args(argv)
    initialize()
    run, every = SUITES[options.suite]
    tally = Tally(options.suite, options.every or every, options.known_bugs)
    here, count = spmd.process_index(), spmd.process_count()
    start = time.perf_counter()
    run(tally)
    ran = tally.passed + len(tally.failures)
    failed = process_allgather(np.array([len(tally.failures)]), tiled=True)  # per process
    if here == 0:
        say(
            f"worker {tally.suite}: {ran} cases (every {tally.every}) in "
            f"{time.perf_counter() - start:.1f} s; covered {dict(tally.covered)}"
        )
        for bug, skipped in tally.skipped.items():
            say(f"worker {tally.suite}: skipped {skipped} for {bug}: {KNOWN_BUGS[bug]}")
    if failed.any():
        raise SystemExit(
            f"worker {tally.suite}: failures per process {failed.tolist()}; process {here} "
            f"failed {len(tally.failures)} of {ran} cases:\n" + "\n".join(tally.failures)
        )
    say(f"worker {tally.suite}: {tally.passed} cases passed on process {here} of {count}")


if __name__ == "__main__":
    main()
