"""The ring all-reduce of spmd/runtime/ring.py, its processes simulated in one process: every
replica equals NumPy's reduction and holds the same bits, each process sends 2 (P - 1) / P
times the data, on chunks that are uneven or empty. (Across real processes:
tests/test_multiprocess_collectives.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from spmd.runtime.communicator import COMBINE
from spmd.runtime.ring import RingJob, accumulate, even_chunks


def simulate(partials: list[np.ndarray], op: str) -> tuple[list[np.ndarray], list[int]]:
    """Each simulated process's result and the data bytes it sent."""
    processes = list(range(len(partials)))
    jobs = [RingJob(partial, processes, p) for p, partial in enumerate(partials)]
    sent = [0] * len(jobs)
    for step in range(jobs[0].steps):
        messages = [job.messages(step) for job in jobs]
        for p, job in enumerate(jobs):
            outgoing = messages[job.left][0]  # what the previous process sends this one
            messages[p][1][...] = outgoing
            sent[job.left] += outgoing.nbytes
        pairs = [job.landed(step) for job in jobs]
        accumulate([pair for pair in pairs if pair is not None], COMBINE[op])
    return [job.result for job in jobs], sent


@pytest.mark.parametrize("count", [2, 3, 4, 8])
@pytest.mark.parametrize("shape", [(0,), (), (1,), (5,), (7, 3), (100_003,)])
def test_every_process_gets_numpys_sum_in_the_same_bits(count, shape):
    rng = np.random.default_rng(count)
    partials = [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]
    results, _ = simulate(partials, "sum")
    exact = np.sum(np.stack(partials).astype(np.float64), axis=0)
    bound = count * np.finfo(np.float32).eps * np.abs(np.stack(partials)).sum(0) + 1e-30
    for result in results:
        assert result.shape == shape and result.dtype == np.float32
        assert np.all(np.abs(result - exact) <= bound)
        assert result.tobytes() == results[0].tobytes()


def test_each_chunk_is_combined_from_the_process_of_its_index_on_in_ring_order():
    """Chunk c of 3 processes is (x_c + x_(c+1)) + x_(c+2): the order ring.py states."""
    partials = [np.array([1e8, 1.0, 1.0], np.float32), np.array([1.0, 1e8, 1.0], np.float32),
                np.array([-1e8, -1e8, 1e8], np.float32)]  # fmt: skip
    results, _ = simulate(partials, "sum")
    f32 = np.float32
    expected = [
        (f32(1e8) + f32(1.0)) + f32(-1e8),  # chunk 0: x0, x1, x2: the 1 is lost
        (f32(1e8) + f32(-1e8)) + f32(1.0),  # chunk 1: x1, x2, x0
        (f32(1e8) + f32(1.0)) + f32(1.0),  # chunk 2: x2, x0, x1
    ]
    np.testing.assert_array_equal(results[0], np.array(expected, np.float32))


@pytest.mark.parametrize("op, dtype", [("max", np.float64), ("min", np.int16), ("prod", np.int64),
                                       ("and", np.bool_), ("or", np.bool_), ("sum", np.uint8),
                                       ("sum", np.complex64), ("max", np.float16)])  # fmt: skip
def test_other_ops_and_dtypes_equal_numpy_exactly(op, dtype):
    rng = np.random.default_rng(0)
    partials = [(rng.integers(0, 50, 1001) % 7).astype(dtype) for _ in range(4)]
    if np.dtype(dtype).kind == "f":
        partials[2][10] = np.nan  # np.maximum keeps a NaN (MPI's MAX would drop it)
    results, _ = simulate(partials, op)
    wanted = COMBINE[op].reduce(np.stack(partials), axis=0).astype(dtype)
    for result in results:
        np.testing.assert_array_equal(result, wanted)


@pytest.mark.parametrize("count", [2, 4, 8])
def test_each_process_sends_two_times_p_minus_one_over_p_of_the_data(count):
    partials = [np.ones(1 << 12, np.float64) for _ in range(count)]
    _, sent = simulate(partials, "sum")
    assert sent == [2 * (count - 1) * partials[0].nbytes // count] * count


def test_chunks_are_consecutive_and_differ_in_length_by_at_most_one():
    for n, parts in [(0, 3), (2, 5), (10, 3), (100_003, 8)]:
        chunks = even_chunks(n, parts)
        assert len(chunks) == parts
        assert [c.start for c in chunks[1:]] == [c.stop for c in chunks[:-1]]
        assert chunks[0].start == 0 and chunks[-1].stop == n
        lengths = {c.stop - c.start for c in chunks}
        assert max(lengths) - min(lengths) <= 1
