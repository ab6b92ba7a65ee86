"""How the executor shares the cores: BLAS calls under simulated core counts, and memory.

A 2-core machine cannot show oversubscription by timing, so these tests watch every BLAS
call the executor makes (spmd/runtime/cores.py) with ``config.cpu_cores`` set to the
machine being simulated, and check the schedule: the threads of concurrent calls add up to
at most the cores, and a multi-threaded call never overlaps another one.
"""

import os
import tracemalloc

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P
from spmd.config import config
from spmd.runtime import cores, segments
from spmd.sharding import device


@pytest.fixture
def simulated_cores():
    def simulate(count):
        config.update("cpu_cores", count)

    yield simulate
    config.update("cpu_cores", None)


def _layer(m, x, w, b):
    return 1 / (1 + m.exp(-(x @ w + b)))


def _two_matmuls(m, x, w, b):
    return m.tanh(x @ w + b) @ w.T


def _row_products(m, x, w, b):
    return m.tanh(m.einsum("ij,ij->i", x, x * 2))


PROGRAMS = {
    "layer, batch sharded": (_layer, (P("x", None), P(), P())),
    "layer, contracting sharded": (_layer, (P(None, "x"), P("x", None), P())),
    "two matmuls, elementwise between": (_two_matmuls, (P("x", None), P(), P())),
    "row products, both operands split": (_row_products, (P("x", None), P(), P())),
}
# Contractions whose operands differ on every device run on each device, in a run of
# per-device steps; the others run once for all devices (spmd/runtime/stacked.py).
PER_DEVICE = {"row products, both operands split"}
# device_put's blocks of x's split rows lie one after another in one buffer: a product with
# x runs in one call on every core, as BLAS shares it out best.
ONE_BUFFER = {"layer, batch sharded", "two matmuls, elementwise between"}


def _replay(events, cores_count):
    """Check a watched run's calls against the schedule's rules; return each call's threads."""
    active = {}
    threads_of_calls = []
    for event, call, threads in events:
        if event == "end":
            del active[call]
            continue
        assert not any(t > 1 for t in active.values()), "a multi-threaded BLAS call overlapped"
        assert threads == 1 or not active, f"a {threads}-thread BLAS call overlapped another"
        active[call] = threads
        assert sum(active.values()) <= cores_count, f"{active} oversubscribe {cores_count} cores"
        threads_of_calls.append(threads)
    assert not active
    return threads_of_calls


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("devices", [2, 4, 8])  # one device: a host program, no executor
@pytest.mark.parametrize("cores_count", [1, 2, 3, 8, 16, 64])
def test_blas_calls_never_oversubscribe_the_cores(simulated_cores, name, devices, cores_count):
    simulate = simulated_cores
    simulate(cores_count)
    fn, specs = PROGRAMS[name]
    rng = np.random.default_rng(devices * 100 + cores_count)
    data = [rng.standard_normal(s) for s in ((1024, 256), (256, 128), (128,))]
    mesh = spmd.make_mesh((devices,), ("x",), devices=spmd.devices()[:devices])
    args = [spmd.device_put(v, NamedSharding(mesh, s)) for v, s in zip(data, specs, strict=True)]
    jitted = spmd.jit(lambda *a: fn(snp, *a))
    jitted(*args)  # compiled outside the watch
    # A program that runs again is timed both ways (spmd/runtime/segments.py): on the pool,
    # and inline (one device after another, each call on every core).
    schedules = set()
    for _ in range(2):
        events = []
        with cores.watch_blas(lambda *e, found=events: found.append(e)):
            result = jitted(*args)
        np.testing.assert_allclose(np.asarray(result), fn(np, *data), rtol=1e-12, atol=1e-12)
        threads = _replay(events, cores_count)
        contractions = 2 if name.startswith("two") else 1
        if name in PER_DEVICE:
            assert len(threads) == contractions * devices, "every device runs every contraction"
        else:  # one call for several devices, or one per device
            assert contractions <= len(threads) <= contractions * devices
        schedules.add(frozenset(threads))
    one_at_a_time = cores_count == 1 or cores_count >= 2 * devices
    side_by_side = cores_count if one_at_a_time else 1
    if name in PER_DEVICE:
        expected = {frozenset({side_by_side}), frozenset({cores_count})}
    elif name in ONE_BUFFER:  # then the tanh's per-device results side by side
        expected = {frozenset({cores_count, side_by_side}) if name.startswith("two") else
                    frozenset({cores_count})}  # fmt: skip
    else:  # side by side on one thread each, or one call on every core
        expected = {frozenset({side_by_side})}
    assert schedules == expected


def test_small_contractions_run_inline_on_one_thread(simulated_cores):
    """A small product for all devices at once runs on the calling thread, on one BLAS
    thread: BLAS threads that split a small product wait for each other, spinning, and
    on a busy machine they spin through each other's time (the MNIST step took 85 ms of
    CPU instead of 32)."""
    simulated_cores(16)
    mesh = spmd.make_mesh((8,), ("x",))
    x = spmd.device_put(np.ones((16, 8)), NamedSharding(mesh, P("x", None)))
    events = []
    with cores.watch_blas(lambda *event: events.append(event)):
        spmd.jit(lambda v: v @ v.T)(x).block_until_ready()
    assert set(_replay(events, 16)) == {1}


def test_processes_on_one_host_share_its_cores(monkeypatch):
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.setattr(device._process, "on_this_host", 2)
    expected = max(1, usable // 2) if usable == os.cpu_count() else usable
    assert cores.core_count() == expected


def test_cpu_cores_option_is_checked():
    with pytest.raises(spmd.errors.ConfigError, match="cpu_cores must be a positive integer"):
        config.update("cpu_cores", 0)


def _chain(m, step):
    def run(v):
        for _ in range(20):
            v = step(m, v)
        return v

    return run


CHAINS = {
    "where(x > 0, x, 0.1 * x)": lambda m, v: m.where(v > 0, v, 0.1 * v),
    "x * sigmoid(x)": lambda m, v: v * (1 / (1 + m.exp(-v))),
    "sin(x.T)": lambda m, v: m.sin(v.T),
}


def _peak_above_start(call) -> int:
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        out = call()
        del out
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", CHAINS)
def test_jitted_chain_frees_each_value_at_its_last_use(name):
    """20 elementwise steps peak near NumPy's one step, not at 20 live intermediates."""
    step = CHAINS[name]
    x = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    xs = spmd.device_put(x, NamedSharding(spmd.make_mesh((2, 4), ("x", "y")), P("x", "y")))
    jitted = spmd.jit(_chain(snp, step))
    jitted(xs)
    numpy_peak = _peak_above_start(lambda: _chain(np, step)(x))
    eager_peak = _peak_above_start(lambda: _chain(snp, step)(xs))
    jit_peak = _peak_above_start(lambda: jitted(xs))
    assert jit_peak <= 1.5 * numpy_peak, (jit_peak, numpy_peak)
    assert jit_peak <= eager_peak, (jit_peak, eager_peak)


@pytest.mark.parametrize("inline_faster", [True, False])
def test_a_segment_that_runs_again_keeps_the_faster_way(simulated_cores, inline_faster):
    simulated_cores(2)
    mesh = spmd.make_mesh((8,), ("x",))
    rng = np.random.default_rng(3)
    data = [rng.standard_normal(s) for s in ((1024, 256), (256, 128), (128,))]
    fn, specs = PROGRAMS["row products, both operands split"]
    args = [spmd.device_put(v, NamedSharding(mesh, s)) for v, s in zip(data, specs, strict=True)]
    jitted = spmd.jit(lambda *a: fn(snp, *a))
    segments._TIMINGS.clear()
    for _ in range(segments.TRIES):
        jitted(*args)
    timings = list(segments._TIMINGS.values())
    assert timings and all(t.tries == segments.TRIES for t in timings)
    for t in timings:
        t.inline, t.pooled = (1.0, 2.0) if inline_faster else (2.0, 1.0)
    for _ in range(2):
        events = []
        with cores.watch_blas(lambda *e, found=events: found.append(e)):
            result = jitted(*args)
        np.testing.assert_allclose(np.asarray(result), fn(np, *data), rtol=1e-12, atol=1e-12)
        assert set(_replay(events, 2)) == ({2} if inline_faster else {1})
