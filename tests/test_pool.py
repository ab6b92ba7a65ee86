"""The thread pool's map (spmd/runtime/pool.py): order, errors, nesting, and each core's
thread taking items until none is left."""

import threading
import time

import pytest

from spmd.config import config
from spmd.runtime.pool import INLINE_BYTES, parallel_map


@pytest.fixture(params=[2, 3, 8])
def cores(request):
    config.update("cpu_cores", request.param)
    yield request.param
    config.update("cpu_cores", None)


def test_results_come_in_item_order(cores):
    assert parallel_map(lambda x: x * x, range(37), INLINE_BYTES) == [x * x for x in range(37)]
    assert parallel_map(lambda x: x, [], INLINE_BYTES) == []


def test_small_work_runs_on_the_calling_thread(cores):
    here = threading.get_ident()
    threads = parallel_map(lambda _: threading.get_ident(), range(8), INLINE_BYTES - 1)
    assert set(threads) == {here}


def test_a_failure_is_raised_after_every_task_stopped(cores):
    running = []

    def item(x):
        running.append(x)
        time.sleep(0.001)
        running.remove(x)
        if x == 5:
            raise ValueError("five")
        return x

    with pytest.raises(ValueError, match="five"):
        parallel_map(item, range(16), INLINE_BYTES)
    assert running == []


def test_a_slow_thread_leaves_its_items_to_the_others(cores):
    """The first item holds its thread; the others take every other item meanwhile."""
    release = threading.Event()
    done, waited = [], []

    def item(x):
        if x == 0:
            waited.append(release.wait(10))
        done.append(x)
        if len(done) == 15:
            release.set()
        return x

    assert parallel_map(item, range(16), INLINE_BYTES) == list(range(16))
    assert waited == [True], "the other threads did not take the held thread's items"


def test_maps_inside_maps_finish(cores):
    def inner(i):
        return sum(parallel_map(lambda j: i * j, range(6), INLINE_BYTES))

    def outer(k):
        return sum(parallel_map(inner, range(k, k + 4), INLINE_BYTES))

    expected = [sum(i * j for i in range(k, k + 4) for j in range(6)) for k in range(5)]
    assert parallel_map(outer, range(5), INLINE_BYTES) == expected
