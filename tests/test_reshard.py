"""Resharding plans between random spec pairs, run and checked shard by shard, and pending sums."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import spmd
from spmd import NamedSharding, P
from spmd.debug import count_collectives
from spmd.sharding.device_program import Reshard
from spmd.sharding.plans import COLLECTIVES, plan
from spmd.sharding.rules import ValueSharding
from tests.test_partition import (
    SHARDED,
    assert_valid_array,
    mesh_of,
    put,
    random_spec,
    rng_for,
    splits,
)

# ------------------------------------------------------------------ resharding plans

RESHARD_SIZES = (0, 1, 2, 3, 4, 5, 8, 13)


def test_resharding_plans_between_random_specs_are_exact():
    rng = rng_for("reshard")
    meshes = [mesh_of(m) for m in SHARDED]
    counts = {"uneven": 0, "empty": 0, "collectives": 0}
    for _ in range(400):
        mesh = meshes[rng.integers(len(meshes))]
        shape = tuple(int(rng.choice(RESHARD_SIZES)) for _ in range(rng.integers(0, 4)))
        x = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
        src, dst = random_spec(rng, mesh, x.ndim), random_spec(rng, mesh, x.ndim)
        have, want = ValueSharding(src.dims(x.ndim)), ValueSharding(dst.dims(x.ndim))
        steps = plan(mesh, shape, x.itemsize, have, want)
        what = (dict(mesh.shape), shape, src, dst, [str(s) for s in steps])
        if have != want:
            assert steps and steps[0].src == have and steps[-1].dst == want, what
        for first, second in itertools.pairwise(steps):
            assert first.dst == second.src, what
        assert all(s.kind in (*COLLECTIVES, "local slice") and s.nbytes >= 0 for s in steps)
        with count_collectives() as ran:
            result = spmd.jit(lambda v: v, out_shardings=NamedSharding(mesh, dst))(
                put(x, mesh, src)
            )
        assert ran.total == sum(s.is_collective for s in steps), what
        assert ran.total == 0 or src.dims(x.ndim) != dst.dims(x.ndim), what
        assert result.sharding == NamedSharding(mesh, dst), what
        np.testing.assert_array_equal(np.asarray(result), x, err_msg=str(what))
        assert_valid_array(result, x, mesh, True, 1)
        for spec in (src, dst):
            uneven, empty = splits(mesh, shape, spec)
            counts["uneven"] += uneven
            counts["empty"] += empty
        counts["collectives"] += ran.total
    assert counts["uneven"] > 150 and counts["empty"] > 80 and counts["collectives"] > 120, counts


def test_a_local_slice_only_where_each_block_lies_inside_the_one_held():
    """5 split 2 ways is [0, 3) [3, 5); split 4 ways [0, 2) [2, 4) [4, 5) [5, 5): the second
    block is not inside the first, so adding an axis moves data."""
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    have, want = ValueSharding((("x",),)), ValueSharding((("x", "y"),))
    assert [s.kind for s in plan(mesh, (8,), 8, have, want)] == ["local slice"]
    kinds = [s.kind for s in plan(mesh, (5,), 8, have, want)]
    assert "local slice" not in kinds and len(kinds) == 1
    added_major = ValueSharding((("y", "x"),))
    assert [s.kind for s in plan(mesh, (8,), 8, have, added_major)] != ["local slice"]
    x = np.arange(5.0)
    result = spmd.jit(lambda v: v, out_shardings=NamedSharding(mesh, P(("x", "y"))))(
        put(x, mesh, P("x"))
    )
    assert_valid_array(result, x, mesh, True, 1)


def test_pending_sums_resolve_into_random_layouts():
    """A matmul split on its contracting axis (and now and then on its rows), brought to random
    out_shardings: all-reduce or reduce-scatter, then moves, on uneven shapes too."""
    rng = rng_for("pending")
    meshes = [mesh_of(m) for m in SHARDED]
    kinds = set()
    for _ in range(150):
        mesh = meshes[rng.integers(len(meshes))]
        m, k, n = (int(rng.choice((1, 2, 3, 5, 8, 13))) for _ in range(3))
        a = rng.integers(-5, 6, size=(m, k)).astype(np.float64)
        b = rng.integers(-5, 6, size=(k, n)).astype(np.float64)
        a_spec = random_spec(rng, mesh, 2)
        axes = a_spec.dims(2)[1]
        out = random_spec(rng, mesh, 2)
        f = spmd.jit(lambda a, b: a @ b, out_shardings=NamedSharding(mesh, out))
        with count_collectives() as ran:
            result = f(put(a, mesh, a_spec), put(b, mesh, P(axes or None)))
        kinds |= set(ran)
        what = (dict(mesh.shape), (m, k, n), a_spec, out)
        np.testing.assert_array_equal(np.asarray(result), a @ b, err_msg=str(what))
        assert result.sharding == NamedSharding(mesh, out), what
        assert_valid_array(result, a @ b, mesh, True, 1)
    assert {"all-reduce", "reduce-scatter"} <= kinds


# A matmul's partial sum over its contracting axes, brought to an out_sharding: the plan's kinds.
# Shapes are uneven against every split. A reduce-scatter goes straight into the wanted order
# (or a subset of the pending axes) where each new block lies inside the block held; where not,
# into the held order first, then a permute reorders; where neither nests, an all-reduce.
SCATTERS = [  # mesh, (m, k, n), a's spec, b's spec, out spec, pending value, planned kinds
    ("2x4", (7, 11, 5), P(None, ("x", "y")), P(("x", "y")), P(("y", "x")), P(), ["reduce-scatter"]),
    ("2x4", (7, 11, 5), P(None, ("x", "y")), P(("x", "y")), P("y", "x"), P(), ["reduce-scatter"]),
    ("2x4", (7, 11, 5), P(None, ("x", "y")), P(("x", "y")), P("y"), P(), ["reduce-scatter"]),
    ("2x4", (7, 11, 5), P(None, ("x", "y")), P(("x", "y")), P(None, "x"), P(), ["reduce-scatter"]),
    ("2x4", (7, 6, 3), P("x", "y"), P("y"), P(("y", "x")), P("x"), ["reduce-scatter", "permute"]),
    ("2x4", (5, 6, 3), P("x", "y"), P("y"), P(("x", "y")), P("x"), ["all-reduce", "all-to-all"]),
    ("2x2x2", (7, 11, 5), P(None, ("x", "y", "z")), P(("x", "y", "z")), P(("z", "x", "y")), P(),
     ["reduce-scatter"]),
    ("2x2x2", (7, 11, 5), P(None, ("x", "y", "z")), P(("x", "y", "z")), P("z", "y"), P(),
     ["reduce-scatter"]),
    ("2x2x2", (7, 9, 5), P("z", ("x", "y")), P(("x", "y")), P(("z", "y"), "x"), P("z"),
     ["reduce-scatter"]),
    ("2x2x2", (7, 9, 5), P("z", ("x", "y")), P(("x", "y")), P(("y", "z"), "x"), P("z"),
     ["reduce-scatter", "permute"]),
]  # fmt: skip


@pytest.mark.parametrize(("mesh_id", "mkn", "a_spec", "b_spec", "out", "held", "kinds"), SCATTERS)
def test_pending_sums_reduce_scatter_into_any_order_or_subset_of_their_axes(
    mesh_id, mkn, a_spec, b_spec, out, held, kinds
):
    mesh = mesh_of(mesh_id)
    m, k, n = mkn
    rng = rng_for("scatter", mesh_id, mkn, out)
    a = rng.integers(-5, 6, size=(m, k)).astype(np.float64)
    b = rng.integers(-5, 6, size=(k, n)).astype(np.float64)
    args = put(a, mesh, a_spec), put(b, mesh, b_spec)
    f = spmd.jit(lambda a, b: a @ b, out_shardings=NamedSharding(mesh, out))
    (reshard,) = [s for s in f.lower(*args).partitioned.steps if isinstance(s, Reshard)]
    contracted = set(b_spec.dims(2)[0])
    assert reshard.steps[0].src.spec == held and set(reshard.steps[0].src.pending) == contracted
    assert [s.kind for s in reshard.steps] == kinds
    with count_collectives() as ran:
        result = f(*args)
    assert dict(ran) == {kind: kinds.count(kind) for kind in kinds}
    np.testing.assert_array_equal(np.asarray(result), a @ b)
    assert result.sharding == NamedSharding(mesh, out)
    assert_valid_array(result, a @ b, mesh, True, 1)


def test_a_reduce_scatter_into_part_of_the_pending_axes_is_costed_as_scatter_then_all_reduce():
    """f64[8,8] pending over x, y, z, each of 8 devices holding 512 bytes (bytes summed over
    devices): scattering over z (4096 / 2) and all-reducing the 256-byte blocks over x and y
    (2 * 2048 * 3 / 4) moves 2048 + 3072, less than the 2 * 4096 * 7 / 8 = 7168 of an
    all-reduce of the whole over all three axes."""
    mesh = mesh_of("2x2x2")
    partial = ValueSharding(((), ()), ("x", "y", "z"))
    (scatter,) = plan(mesh, (8, 8), 8, partial, ValueSharding((("z",), ())))
    (combine,) = plan(mesh, (8, 8), 8, partial, ValueSharding(((), ())))
    assert (scatter.kind, scatter.dst.spec, scatter.nbytes) == ("reduce-scatter", P("z"), 5120)
    assert (combine.kind, combine.nbytes) == ("all-reduce", 7168)
