"""Per-device steps run once for all of a process's devices (spmd/runtime/stacked.py,
stacking.py, summed.py): contractions with a shared operand, contractions summed by the
reduction that follows them, and steps on shared buffers. NumPy is the oracle, and so is
the same program run per device (the executor without them)."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.config import config
from spmd.debug import count_collectives
from spmd.runtime import executor, stacking
from spmd.runtime.stacking import Blocks, stack
from spmd.runtime.summed import Totals


@pytest.fixture
def per_device(monkeypatch):
    """Run a call with every step per device, as without spmd/runtime/stacked.py."""

    def run(call):
        with monkeypatch.context() as patch:
            patch.setattr(executor._Run, "_once", lambda *a: None)
            return call()

    return run


@pytest.fixture(params=[1, 2, 3, 16])
def cores(request, monkeypatch):
    """A simulated core count, with even small contractions split over the cores."""
    monkeypatch.setattr(stacking, "INLINE_BYTES", 0)
    config.update("cpu_cores", request.param)
    yield request.param
    config.update("cpu_cores", None)


def _put(x, mesh, spec):
    return spmd.device_put(x, NamedSharding(mesh, spec))


def _line(devices=8):
    return spmd.make_mesh((devices,), ("x",), devices=spmd.devices()[:devices])


def test_stack_views_blocks_that_lie_one_after_another_and_copies_others():
    base = np.arange(48.0).reshape(8, 6)
    blocks = [base[i : i + 2] for i in range(0, 8, 2)]
    stacked = stack(blocks)
    assert np.shares_memory(stacked, base) and not stacked.flags.writeable
    np.testing.assert_array_equal(stacked, base.reshape(4, 2, 6))
    shuffled = [blocks[1], blocks[0], blocks[2], blocks[3]]
    copied = stack(shuffled)
    assert not np.shares_memory(copied, base)
    np.testing.assert_array_equal(copied, np.stack(shuffled))
    strided = [base[i : i + 2, ::2] for i in range(0, 8, 2)]  # not contiguous: copied
    np.testing.assert_array_equal(stack(strided), np.stack(strided))
    np.testing.assert_array_equal(stack(blocks, axis=1), np.stack(blocks, axis=1))


CONTRACTIONS = {  # name: (fn, shapes, specs)
    "x @ w, rows split": (lambda m, x, w: x @ w, ((64, 24), (24, 40)), (P("x"), P())),
    "w @ x.T, columns split": (lambda m, x, w: w.T @ x.T, ((64, 24), (24, 40)), (P("x"), P())),
    "batched, batch split": (
        lambda m, x, w: m.einsum("bij,jk->bik", x, w),
        ((16, 3, 24), (24, 40)),
        (P("x"), P()),
    ),
    "batch label in both": (
        lambda m, x, w: m.einsum("bij,bjk->bik", x, w),
        ((4, 16, 24), (4, 24, 8)),
        (P(None, "x"), P()),
    ),
    "uneven rows": (lambda m, x, w: x @ w, ((13, 24), (24, 40)), (P("x"), P())),
    "integers": (lambda m, x, w: x @ w, ((64, 24), (24, 40)), (P("x"), P())),
    "layer, contracting split": (
        lambda m, x, w: m.tanh(x @ w),
        ((40, 64), (64, 24)),
        (P(None, "x"), P("x")),
    ),
    "to a scalar, summed": (
        lambda m, x, w: m.einsum("ij,ij->", x, x * 2) + w.sum(),
        ((64, 24), (24, 40)),
        (P("x"), P()),
    ),
    "batch and rows summed, columns first": (
        lambda m, x, w: m.einsum("bij,bik->kj", x, x[:, :, :5] * 3),
        ((16, 6, 8), (24, 40)),
        (P("x"), P()),
    ),
    "gradient, summed then scaled": (
        lambda m, x, w: -0.5 * (x.T @ (x @ w)),
        ((64, 24), (24, 40)),
        (P("x"), P()),
    ),
}


@pytest.mark.parametrize("devices", [2, 8])
@pytest.mark.parametrize("name", CONTRACTIONS)
def test_contractions_match_numpy_and_the_per_device_run(per_device, cores, name, devices):
    fn, shapes, specs = CONTRACTIONS[name]
    rng = np.random.default_rng(len(name) * 10 + devices)
    if name == "integers":
        data = [rng.integers(-5, 6, size=s) for s in shapes]
    else:
        data = [rng.standard_normal(s) for s in shapes]
    mesh = _line(devices)
    args = [_put(x, mesh, s) for x, s in zip(data, specs, strict=True)]
    jitted = spmd.jit(lambda *a: fn(snp, *a))
    expected = fn(np, *data)
    for _ in range(2):  # a second run finds blocks a first run laid side by side
        result = jitted(*args)
        assert result.dtype == expected.dtype
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-12, atol=1e-12)
    alone = per_device(lambda: jitted(*args))
    np.testing.assert_allclose(np.asarray(result), np.asarray(alone), rtol=1e-12, atol=1e-12)
    assert result.sharding == alone.sharding


def _mlp_loss(m, params, x, y):
    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w + b
        if k < len(params) - 1:
            h = m.tanh(h)
    return m.mean((h - y) ** 2)


def _numpy_step(params, x, y, rate):
    """One SGD step of ``_mlp_loss``, its gradient written out by hand."""
    hs, h = [x], x
    for k, (w, b) in enumerate(params):
        h = h @ w + b
        if k < len(params) - 1:
            h = np.tanh(h)
        hs.append(h)
    grad = 2 * (h - y) / h.size
    new = []
    for k in reversed(range(len(params))):
        w, b = params[k]
        new.append((w - rate * hs[k].T @ grad, b - rate * grad.sum(axis=0)))
        grad = grad @ w.T
        if k > 0:
            grad = grad * (1 - hs[k] ** 2)
    return new[::-1]


def test_a_data_parallel_training_step_sums_each_gradient_once(per_device, cores):
    rng = np.random.default_rng(7)
    widths = (24, 48, 16)
    params = [
        (rng.standard_normal((m, n)) / np.sqrt(m), rng.standard_normal(n))
        for m, n in itertools.pairwise(widths)
    ]
    x, y = rng.standard_normal((64, widths[0])), rng.standard_normal((64, widths[-1]))
    mesh = _line()
    placed = [(_put(w, mesh, P()), _put(b, mesh, P())) for w, b in params]

    @spmd.jit
    def step(params, x, y):
        grads = spmd.grad(lambda p: _mlp_loss(snp, p, x, y))(params)
        pairs = zip(params, grads, strict=True)
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in pairs]

    args = (placed, _put(x, mesh, P("x")), _put(y, mesh, P("x")))
    with count_collectives() as counts:
        new = step(*args)
    with count_collectives() as alone_counts:
        alone = per_device(lambda: step(*args))
    assert dict(counts) == dict(alone_counts)  # the reductions still count as collectives
    expected = _numpy_step(params, x, y, 0.1)
    for (w, b), (nw, nb), (aw, ab) in zip(new, expected, alone, strict=True):
        np.testing.assert_allclose(np.asarray(w), nw, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(b), nb, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(w), np.asarray(aw), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(b), np.asarray(ab), rtol=1e-12, atol=1e-12)
        # the update ran once: every device shares one read-only result
        buffers = list(w._buffers.values())
        assert all(b is buffers[0] for b in buffers) and not buffers[0].flags.writeable


def test_a_training_loop_with_split_weights_matches_numpy(per_device, cores):
    """fori_loop of SGD steps: the weights split inside the loop, gathered for each step and
    their gradients reduce-scattered after a scaling (a step linear in the pending sum)."""
    rng = np.random.default_rng(11)
    widths = (32, 64, 32)
    ws = [rng.standard_normal((m, n)) / np.sqrt(m) for m, n in itertools.pairwise(widths)]
    x, y = rng.standard_normal((128, widths[0])), rng.standard_normal((128, widths[-1]))
    mesh = _line()

    def loss(params, x, y):
        return _mlp_loss(snp, [(w, 0.0) for w in params], x, y)

    @spmd.jit
    def train(params, x, y):
        def body(i, params):
            grads = spmd.grad(loss)(params, x, y)
            return [w - 0.05 * g for w, g in zip(params, grads, strict=True)]

        return spmd.lax.fori_loop(0, 5, body, params)

    expected = [(w, np.zeros(w.shape[1])) for w in ws]
    for _ in range(5):  # no biases: each step starts from zero ones
        expected = [(w, np.zeros_like(b)) for w, b in _numpy_step(expected, x, y, 0.05)]
    args = ([_put(w, mesh, P()) for w in ws], _put(x, mesh, P("x")), _put(y, mesh, P("x")))
    result, alone = train(*args), per_device(lambda: train(*args))
    for got, (want, _), other in zip(result, expected, alone, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(got), np.asarray(other), rtol=1e-10, atol=1e-12)


def test_sums_over_one_mesh_axis_of_two(cores):
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((16, 32)), rng.standard_normal((32, 8))
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    f = spmd.jit(lambda a, b: (a @ b) * 2 - (a @ b) / 3)
    for specs in [(P("x", "y"), P("y")), (P(None, "y"), P("y")), (P("y", "x"), P("x"))]:
        result = f(_put(x, mesh, specs[0]), _put(w, mesh, specs[1]))
        np.testing.assert_allclose(np.asarray(result), (x @ w) * 2 - (x @ w) / 3, rtol=1e-12)


def test_totals_go_back_to_partials_that_sum_to_them():
    total = np.arange(6.0).reshape(2, 3)
    other = total + 100
    env = {"v": {0: total, 1: total, 2: other, 3: other}}
    totals = Totals()
    totals.groups["v"] = [[0, 1], [2, 3]]
    totals.partials("v", env, (0, 1, 2, 3))
    assert "v" not in totals.groups
    np.testing.assert_array_equal(env["v"][0] + env["v"][1], total)
    np.testing.assert_array_equal(env["v"][2] + env["v"][3], other)
    assert not env["v"][1].any() and not env["v"][3].any()


def test_blocks_are_told_from_one_shared_buffer():
    from spmd.runtime.stacking import values_of

    shared = np.ones(3)
    env = {"a": dict.fromkeys(range(4), shared), "b": {p: np.ones(3) for p in range(4)}}
    assert values_of("a", env, range(4)) is shared
    assert type(values_of("b", env, range(4))) is Blocks
