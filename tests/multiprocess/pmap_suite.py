"""The ``pmap`` suite: tests/test_pmap.py's functions, and every collective of
tests/test_shard_map.py over 1 to 8 devices, checked by its coordinate-loop reference.
The collective cases serve the nested grids of the ``pmap_nested`` suite too."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from unittest import mock

import numpy as np

import spmd
from tests import test_pmap
from tests import test_shard_map as shard_map_tests
from tests.multiprocess.checks import seeded
from tests.multiprocess.mapped import Mapped, nested_pmap, run_mapped
from tests.multiprocess.tally import Tally
from tests.pmap_reference import DTYPES, mapped_reference, sample, take


def run(tally: Tally) -> None:
    cases = [*function_cases(), *collective_cases(lambda n: [(n,)], ("i",))]
    for i, case in enumerate(cases):
        if tally.sampled(i):
            run_mapped(tally, case)


def device_counts() -> range:
    """Every number of devices a pmap can map over: 1 to the job's."""
    return range(1, spmd.device_count() + 1)


def function_cases() -> Iterator[Mapped]:
    """tests/test_pmap.py's FUNCTIONS on every mapped size and dtype, with random in_axes
    and out_axes, against its mapped_reference (a NumPy loop over the mapped index)."""
    for (name, (body, reference, weighted)), dtype, n in itertools.product(
        test_pmap.FUNCTIONS.items(), DTYPES, device_counts()
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
    """Every collective of tests/test_shard_map.py over random axes of each of ``grids(n)``
    (for n devices in all), with random parameters drawn by its collective_params, on a
    nested pmap over ``names``."""
    for n in device_counts():
        for grid, name in itertools.product(grids(n), shard_map_tests.COLLECTIVES):
            rng = seeded("collective", grid, name)
            block = block_shape(rng, math.prod(grid))
            # collective_params reads the axes of a mesh of tests/test_shard_map.py's MESHES
            key = f"pmap grid {grid}"
            with mock.patch.dict(shard_map_tests.MESHES, {key: (grid, names)}):
                params = shard_map_tests.collective_params(rng, name, key, block)
            if params is not None:
                x = sample(rng, (*grid, *block), np.float64)
                yield grid_collective(dict(zip(names, grid, strict=True)), name, params, x)


def block_shape(rng, group: int) -> tuple[int, ...]:
    """1 to 3 dimensions, one of them with room to split over any group of the grid."""
    ndim = int(rng.integers(1, 4))
    wide = int(rng.integers(ndim))
    return tuple(
        group * int(rng.choice((1, 2))) if d == wide else int(rng.choice((1, 2, 3)))
        for d in range(ndim)
    )


def grid_collective(sizes: dict[str, int], name: str, params: dict, x: np.ndarray) -> Mapped:
    """``name`` on each device's ``x[coordinate] * 3 - 1`` over the grid ``sizes``."""
    grid, names = tuple(sizes.values()), tuple(sizes)
    f = nested_pmap(lambda v: shard_map_tests.call_collective(name, v * 3 - 1, params), names)
    coords = list(itertools.product(*map(range, grid)))
    values = {c: x[c] * 3 - 1 for c in coords}
    # what the reference reads of a mesh: its axes and their sizes
    mesh = SimpleNamespace(devices=np.empty(grid), shape=sizes, axis_names=names)
    outs = shard_map_tests.reference_collective(mesh, name, params, values)
    if name == "axis_index":
        outs = {c: values[c] + outs[c] for c in coords}
    want = np.stack([outs[c] for c in coords]).reshape(*grid, *np.shape(outs[coords[0]]))
    return Mapped(f"{name} over {sizes} {params}", f, (x,), (0,), (0,), (want,), grid, name)
