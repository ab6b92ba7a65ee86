"""Backward propagation: out_shardings and consumers ask for values to be computed split."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.sharding.device_program import Compute
from spmd.sharding.plans import cost
from spmd.sharding.rules import ValueSharding

GRID = spmd.make_mesh((2, 4), ("x", "y"))


def put(x, *spec):
    return spmd.device_put(x, NamedSharding(GRID, P(*spec)))


def computed(f, *args) -> list:
    """The spec each per-device equation of ``f(*args)`` computes its result in, in order (a
    fused step's members each count: they run in the step's blocks)."""
    specs = []
    for step in f.lower(*args).partitioned.steps:
        if isinstance(step, Compute):
            kernel = step.eqn.params.get("kernel")
            specs += [step.shardings[0].spec] * (len(kernel.members) if kernel else 1)
    return specs


def host_equations(f, *args) -> list[str]:
    return [eqn.primitive.name for eqn in f.lower(*args).partitioned.host_equations]


def test_random_numbers_wanted_split_are_drawn_split():
    key = spmd.random.key(3)
    f = spmd.jit(
        lambda k: spmd.random.normal(k, (37, 22)) * 2,
        out_shardings=NamedSharding(GRID, P("x", "y")),
    )
    assert host_equations(f, key) == []
    assert computed(f, key) == [P("x", "y")] * 2
    with spmd.debug.count_collectives() as counts:
        out = f(key)
    assert counts.total == 0
    np.testing.assert_array_equal(
        np.asarray(out), np.asarray(spmd.random.normal(key, (37, 22)) * 2)
    )


def test_a_chain_on_a_replicated_array_is_computed_in_the_wanted_blocks():
    x = np.linspace(-3, 3, 45 * 7, dtype=np.float32).reshape(45, 7)  # uneven over x and y
    f = spmd.jit(
        lambda v: snp.exp(snp.sin(v) * 2 + 1) - v, out_shardings=NamedSharding(GRID, P("y", "x"))
    )
    assert computed(f, put(x)) == [P("y", "x")] * 5
    with spmd.debug.count_collectives() as counts:
        out = f(put(x))
    assert counts.total == 0
    np.testing.assert_allclose(np.asarray(out), np.exp(np.sin(x) * 2 + 1) - x, rtol=1e-6)
    assert out.sharding.spec == P("y", "x")


def test_host_data_moves_to_the_mesh_only_to_be_split_over_every_axis():
    x = np.arange(64.0).reshape(8, 8)
    everywhere = spmd.jit(lambda v: snp.sqrt(v) + 1, out_shardings=NamedSharding(GRID, P("x", "y")))
    assert host_equations(everywhere, x) == []
    assert computed(everywhere, x) == [P("x", "y")] * 2
    # Split over x only, each block would be computed on 4 devices: once, on the host, is less.
    half = spmd.jit(lambda v: snp.sqrt(v) + 1, out_shardings=NamedSharding(GRID, P("x")))
    assert host_equations(half, x) == ["sqrt", "add"]
    for f in (everywhere, half):
        np.testing.assert_allclose(np.asarray(f(x)), np.sqrt(x) + 1)


def test_users_that_disagree_leave_the_value_as_it_was():
    x = np.arange(48.0, dtype=np.float32).reshape(8, 6)
    f = spmd.jit(
        lambda v: (c := snp.cos(v), c + 1),
        out_shardings=(NamedSharding(GRID, P("x", "y")), NamedSharding(GRID, P("y", "x"))),
    )
    steps = computed(f, put(x))
    assert steps[0] == P()  # cos is wanted two ways: computed whole, sliced twice
    a, b = f(put(x))
    np.testing.assert_allclose(np.asarray(a), np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b), np.cos(x) + 1, rtol=1e-6)


def test_a_value_also_returned_whole_is_not_split():
    x = np.arange(48.0, dtype=np.float32).reshape(8, 6)
    f = spmd.jit(
        lambda v: (s := snp.sin(v), s * 2),
        out_shardings=(NamedSharding(GRID, P()), NamedSharding(GRID, P("x", "y"))),
    )
    assert computed(f, put(x)) == [P(), P("x", "y")]
    a, b = f(put(x))
    np.testing.assert_allclose(np.asarray(a), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(b), np.sin(x) * 2, rtol=1e-6)


def test_reductions_split_their_kept_dimensions_but_never_a_blocked_axis():
    x = np.arange(48.0, dtype=np.float32).reshape(8, 6)
    f = spmd.jit(lambda v: snp.exp(v.mean(axis=0)), out_shardings=NamedSharding(GRID, P("y")))
    assert computed(f, put(x)) == [P("y")] * 3  # each device sums, divides, exps its own columns
    np.testing.assert_allclose(np.asarray(f(put(x))), np.exp(x.mean(axis=0)), rtol=1e-6)
    g = spmd.jit(lambda v: snp.cumsum(v, axis=0) * 2, out_shardings=NamedSharding(GRID, P("x")))
    assert computed(g, put(x)) == [P(), P("x")]  # a cumsum cannot split its own axis
    np.testing.assert_allclose(np.asarray(g(put(x))), np.cumsum(x, axis=0) * 2, rtol=1e-6)


@pytest.mark.parametrize("seed", range(24))
def test_sampled_chains_with_out_shardings_equal_numpy_and_split_the_work(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 11, size=rng.integers(1, 4)))
    spec, free = [], ["x", "y"]
    for _ in shape:
        entry = [str(a) for a in rng.permutation(free) if rng.random() < 0.6]
        free = [a for a in free if a not in entry]
        spec.append(None if not entry else entry[0] if len(entry) == 1 else tuple(entry))
    while spec and spec[-1] is None:
        spec.pop()
    target = P(*spec)
    ops = ["sin", "exp", "tanh", "linear"]
    chain = [ops[k] for k in rng.integers(len(ops), size=rng.integers(1, 5))]

    def f(v, m=snp):
        for name in chain:
            v = v * 3 - 1 if name == "linear" else getattr(m, name)(v)
        return v

    x = rng.standard_normal(shape).astype(np.float32)
    g = spmd.jit(f, out_shardings=NamedSharding(GRID, target))
    assert all(s == target for s in computed(g, put(x)))
    with spmd.debug.count_collectives() as counts:
        out = g(put(x))
    assert counts.total == 0
    np.testing.assert_allclose(np.asarray(out), f(x, np), rtol=2e-6, atol=1e-6)
    assert out.sharding.spec == target


def test_moving_a_small_operand_beats_moving_a_large_result():
    line = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.arange(64.0), NamedSharding(line, P("x")))
    f = spmd.jit(
        lambda v: v[:, None] * snp.ones((64, 64)), out_shardings=NamedSharding(line, P(None, "x"))
    )
    with spmd.debug.count_collectives() as counts:
        out = f(x)
    np.testing.assert_array_equal(np.asarray(out), np.arange(64.0)[:, None] * np.ones((64, 64)))
    # Moving the 64 x 64 result from rows to columns would take an all-to-all of 28 KiB;
    # gathering the 64 inputs takes 3.5 KiB.
    assert dict(counts) == {"all-gather": 1}
    assert counts.bytes["all-gather"] == 64 * 8 * 7


def test_a_large_operand_is_not_moved_to_spare_a_small_result():
    x = np.arange(48.0 * 8).reshape(48, 8)
    f = spmd.jit(lambda v: snp.sin(v).sum(axis=1), out_shardings=NamedSharding(GRID, P("y")))
    with spmd.debug.count_collectives() as counts:
        out = f(put(x, "x"))
    np.testing.assert_allclose(np.asarray(out), np.sin(x).sum(axis=1))
    assert computed(f, put(x, "x"))[0] == P("x")  # sin stays where x lies
    assert counts.total == 1  # the 48 sums move, not the 384 elements


def test_a_wish_passes_a_tie_on_to_where_moving_data_is_cheaper():
    line = spmd.make_mesh((8,), ("x",))
    v, w = (spmd.device_put(np.arange(64.0) + k, NamedSharding(line, P("x"))) for k in (0, 1))
    f = spmd.jit(
        lambda v, w: v[:, None] * w[None, :] + 1, out_shardings=NamedSharding(line, P(None, "x"))
    )
    with spmd.debug.count_collectives() as counts:
        out = f(v, w)
    np.testing.assert_array_equal(
        np.asarray(out), np.outer(np.arange(64.0), np.arange(1.0, 65)) + 1
    )
    assert dict(counts.bytes) == {"all-gather": 64 * 8 * 7}  # not a 28 KiB all-to-all at the end


def _moved_bytes(f, *args) -> int:
    with spmd.debug.count_collectives() as counts:
        f(*args)
    return sum(counts.bytes.values())


@pytest.mark.parametrize("seed", range(30))
def test_out_shardings_never_cost_more_than_resharding_the_result_afterwards(seed):
    """Backward propagation may only trade moves for cheaper ones: a program with
    out_shardings moves at most what it moves without them plus one reshard of its result."""
    rng = np.random.default_rng(seed)
    n, m = (int(k) for k in rng.integers(1, 19, size=2))
    specs = [P(), P("x"), P("y"), P(("x", "y")), P(("y", "x"))]
    a = put(rng.standard_normal(n), *specs[rng.integers(len(specs))])
    b = put(rng.standard_normal(m), *specs[rng.integers(len(specs))])
    steps = rng.integers(4, size=rng.integers(1, 4))

    def program(a, b):
        out = a[:, None] * b[None, :]
        for step in steps:
            out = [snp.sin(out), out * 2 + 1, snp.exp(out) - out, out / 3][step]
        return out

    targets = [P(), P("x"), P("y"), P("x", "y"), P("y", "x"), P(None, ("x", "y"))]
    target = targets[rng.integers(len(targets))]
    free = spmd.jit(program)
    natural = free(a, b)
    wanted = spmd.jit(program, out_shardings=NamedSharding(GRID, target))
    result = wanted(a, b)
    np.testing.assert_allclose(np.asarray(result), np.asarray(natural), rtol=1e-12)
    assert result.sharding.spec == target
    have = ValueSharding(natural.sharding.spec.dims(2))
    final = cost(GRID, natural.shape, 8, have, ValueSharding(target.dims(2)))
    assert _moved_bytes(wanted, a, b) <= _moved_bytes(free, a, b) + final
