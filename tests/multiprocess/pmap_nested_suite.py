"""The ``pmap_nested`` suite: nested pmaps over tests/test_pmap_nested.py's grids: every
collective over random axes of 2- and 3-level grids, nested in_axes and out_axes, and work
between the levels, against NumPy loops over the grid."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

import numpy as np

import spmd
from tests import test_pmap_nested
from tests.multiprocess.checks import seeded
from tests.multiprocess.mapped import Mapped, nested_pmap, run_mapped
from tests.multiprocess.pmap_suite import collective_cases
from tests.multiprocess.tally import Tally
from tests.pmap_reference import sample


def run(tally: Tally) -> None:
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


def grid_function_cases(grids) -> Iterator[Mapped]:
    """An elementwise body reading both axis indices (test_chained_nested_pmaps_on_any_grid),
    against tests/test_pmap_nested.py's grid_reference."""

    def body(v):
        return v * 2 + spmd.lax.axis_index("cols") - spmd.lax.axis_index("rows")

    for rows, cols in grids:
        x = np.arange(rows * cols * 3, dtype=np.float64).reshape(rows, cols, 3)
        f = nested_pmap(body, ("rows", "cols"))
        want = test_pmap_nested.grid_reference(lambda r, c, v: v * 2 + c - r, x, rows, cols)
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
    """The outer pmap's body: work before and after the inner pmap (over the rows' block)."""
    return lambda block: inner(block * 2).sum(axis=0) - block[0]
