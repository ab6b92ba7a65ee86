"""Collectives in shard_map: JAX's documented results, replication checks, and misuse."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import P
from spmd.lax import all_gather, axis_index, pmean, ppermute, psum, psum_scatter
from tests.tolerance import assert_close_sigmoid_layer


@pytest.fixture
def line():
    return spmd.make_mesh((8,), ("x",))


def test_ppermute_shift_by_one_matches_jax(line):
    perm = [(i, (i + 1) % 8) for i in range(8)]
    f = spmd.shard_map(lambda b: ppermute(b, "x", perm), line, in_specs=P("x"), out_specs=P("x"))
    want = [14, 15, *range(14)]
    np.testing.assert_array_equal(np.asarray(f(np.arange(16))), want)


def test_psum_scatter_tiled_of_a_replicated_value_matches_jax(line):
    f = spmd.shard_map(
        lambda b: psum_scatter(b, "x", tiled=True), line, in_specs=P(), out_specs=P("x")
    )
    np.testing.assert_array_equal(np.asarray(f(np.arange(16))), np.arange(16) * 8)


def test_axis_index_over_blocks_of_two_matches_jax(line):
    f = spmd.shard_map(
        lambda b: snp.broadcast_to(axis_index("x"), b.shape),
        line,
        in_specs=P("x"),
        out_specs=P("x"),
    )
    np.testing.assert_array_equal(np.asarray(f(np.arange(16))), np.repeat(np.arange(8), 2))


def test_all_gather_tiled_gives_every_device_all_sixteen(line):
    f = spmd.shard_map(
        lambda b: all_gather(b, "x", tiled=True), line, in_specs=P("x"), out_specs=P("x")
    )
    out = f(np.arange(16))
    assert out.shape == (128,)
    np.testing.assert_array_equal(np.asarray(out), np.tile(np.arange(16), 8))


def test_psum_of_a_python_number_is_the_axis_size():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    f = spmd.shard_map(
        lambda b: b * 0 + psum(1, ("x", "y")) + psum(1, "y"),
        mesh,
        in_specs=P("x"),
        out_specs=P("x"),
    )
    np.testing.assert_array_equal(np.asarray(f(np.zeros(4))), [12, 12, 12, 12])


def test_check_rep_rejects_a_varying_value_claimed_replicated(line):
    f = spmd.shard_map(lambda a: a * 2, line, in_specs=P("x"), out_specs=P())
    with pytest.raises(spmd.ShardingError, match=r"output 0.*replicated over mesh axis 'x'"):
        f(np.arange(16.0))


def test_check_rep_accepts_what_a_psum_made_replicated(line):
    f = spmd.shard_map(lambda a: psum(a.sum(), "x"), line, in_specs=P("x"), out_specs=P())
    out = f(np.arange(16.0))
    assert float(out) == 120.0
    assert out.sharding.spec == P()


def test_without_check_rep_every_device_takes_the_first_ones_value(line):
    f = spmd.shard_map(lambda a: a * 2, line, in_specs=P("x"), out_specs=P(), check_rep=False)
    out = f(np.arange(16.0))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.0])
    for shard in out.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), [0.0, 2.0])


def test_a_collective_over_an_unbound_axis_fails_at_trace_time(line):
    f = spmd.shard_map(lambda a: psum(a, "y"), line, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(spmd.AxisNameError, match=r"'y' is not bound.*'x' \(size 8\)"):
        spmd.jit(f).lower(np.arange(16.0))
    with pytest.raises(spmd.AxisNameError, match="none is bound"):
        psum(np.ones(3), "x")


def test_a_collective_over_uneven_blocks_says_how_to_fix_it(line):
    f = spmd.shard_map(lambda a: psum(a, "x"), line, in_specs=P("x"), out_specs=P())
    with pytest.raises(spmd.ShapeError, match=r"psum over \('x',\).*uneven.*multiple"):
        f(np.arange(11.0))


def test_uneven_blocks_work_where_the_function_can_run_on_them(line):
    x = np.arange(11.0)
    f = spmd.shard_map(
        lambda a: a - pmean(a.sum(), "x") / 11 * 8, line, in_specs=P("x"), out_specs=P("x")
    )
    np.testing.assert_allclose(np.asarray(f(x)), x - x.mean())


def test_the_tutorial_layer_sharded_is_a_jit_over_a_shard_map():
    mesh = spmd.make_mesh((4, 2), ("batch", "model"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)

    @spmd.jit
    def layer_sharded(x, w, b):
        def block(x, w, b):
            return spmd.nn.sigmoid(psum(x @ w, "model") + b)

        return spmd.shard_map(
            block,
            mesh,
            in_specs=(P("batch", "model"), P("model", None), P()),
            out_specs=P("batch", None),
        )(x, w, b)

    got = layer_sharded(x, w, b)
    assert_close_sigmoid_layer(got, x, w, b)  # psum adds the halves of each sum in float32
    assert got.sharding == spmd.NamedSharding(mesh, P("batch", None))
    text = layer_sharded.lower(x, w, b).as_text()
    assert "psum[axes=('model',)" in text
    explained = layer_sharded.lower(x, w, b).explain()
    assert "all-reduce over ('model')" in explained


def test_pytrees_of_specs_and_results():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    f = spmd.shard_map(
        lambda d: {"sum": psum(d["a"].sum(), ("x", "y")), "twice": d["b"] * 2},
        mesh,
        in_specs=({"a": P("x", "y"), "b": P("y")},),
        out_specs={"sum": P(), "twice": P("y")},
    )
    a, b = np.arange(32.0).reshape(4, 8), np.arange(8.0)
    out = f({"a": a, "b": b})
    assert float(out["sum"]) == a.sum()
    np.testing.assert_array_equal(np.asarray(out["twice"]), b * 2)


def test_sharded_arrays_move_to_in_specs_and_results_stay_as_out_specs():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = spmd.device_put(np.arange(32.0).reshape(4, 8), spmd.NamedSharding(mesh, P("x", "y")))
    same = spmd.shard_map(lambda b: b + 1, mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
    with spmd.debug.count_collectives() as counts:
        y = same(x)
        z = same(y)
    assert counts.total == 0
    np.testing.assert_array_equal(np.asarray(z), np.arange(32.0).reshape(4, 8) + 2)
    by_rows = spmd.shard_map(lambda b: b * 1, mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")))
    np.testing.assert_array_equal(np.asarray(by_rows(z)), np.asarray(z))


def test_smap_is_shard_map():
    assert spmd.smap is spmd.shard_map


def test_misuse_gets_clear_errors(line):
    with pytest.raises(spmd.ShardingError, match="names mesh axis 'q'"):
        spmd.shard_map(lambda a: a, line, in_specs=P("q"), out_specs=P())(np.ones(8))
    with pytest.raises(spmd.ShardingError, match="rank 1"):
        spmd.shard_map(lambda a: a, line, in_specs=P("x", None), out_specs=P())(np.ones(8))
    with pytest.raises(spmd.ShapeError, match="a multiple of 8"):
        spmd.shard_map(
            lambda a: psum_scatter(a, "x", tiled=True), line, in_specs=P(), out_specs=P("x")
        )(np.ones(12))
    with pytest.raises(spmd.ShapeError, match="perm pair"):
        spmd.shard_map(
            lambda a: ppermute(a, "x", [(0, 9)]), line, in_specs=P("x"), out_specs=P("x")
        )(np.ones(8))


def test_uneven_bodies_may_differ_in_constants_and_keep_weak_types(line):
    f = spmd.shard_map(lambda b: b * (b.shape[0] + 0.5), line, in_specs=P("x"), out_specs=P("x"))
    x = np.arange(11, dtype=np.float32)
    out = f(x)
    assert out.dtype == np.float32
    factors = np.array([2.5] * 10 + [1.5], np.float32)  # blocks of 2, then 1, then empty
    np.testing.assert_array_equal(np.asarray(out), x * factors)


def test_a_collective_of_a_python_number_is_a_number_known_when_traced():
    mesh = spmd.make_mesh((2, 4), ("i", "j"))
    seen = {}

    def body(block):
        seen.update(size=psum(1, "j"), both=psum(1, ("i", "j")), mean=pmean(2.0, "i"))
        return block * len(range(psum(1, "j")))

    out = spmd.shard_map(body, mesh=mesh, in_specs=spmd.P("i", "j"), out_specs=spmd.P("i", "j"))(
        np.ones((2, 4))
    )
    assert seen == {"size": 4, "both": 8, "mean": 2.0} and type(seen["size"]) is int
    np.testing.assert_array_equal(out, np.full((2, 4), 4.0))


@pytest.mark.parametrize("orders", ["CCC", "FFF", "CFC", "FCF"])
def test_an_all_reduce_sums_blocks_in_any_memory_order(orders):
    """Blocks that are transposed products (column-major, as a weight's gradient is) or of
    mixed orders sum exactly as row-major ones, large enough to split over the pool."""
    from spmd.runtime.communicator import _combined

    rng = np.random.default_rng(0)
    blocks = [np.asarray(rng.standard_normal((700, 900)), order=o) for o in orders]
    total = _combined(blocks, np.add)
    np.testing.assert_array_equal(total, (blocks[0] + blocks[1]) + blocks[2])
    assert total.flags.f_contiguous == (orders == "FFF")
