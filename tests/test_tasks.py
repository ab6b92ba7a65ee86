"""shard_tasks and run_tasks: per-block tasks against NumPy, pickled, on processes and Dask."""

import itertools
import logging
import multiprocessing
import pickle
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.tree_util import tree_leaves, tree_map
from tests.cases import CASES, FAMILIES, KNOWN_BUGS, assert_matches, make_inputs, numpy_result

SEED = 20261123


def nx_inputs():
    left = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    right = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 2, 2) + 10
    return left, right


def nx_fun(left, right, m=snp):
    """The example of Elixir Nx's sharding compiler (elixir-nx/nx pull request 1544)."""
    shifted = m.transpose(left + m.asarray([[1]], dtype=np.float32), (0, 2, 1))
    return m.tensordot(shifted, m.squeeze(right - 1, (0, 1)), axes=([2, 1], [1, 0]))


def fold(holder, tasks, order):
    for k in order:
        task_args, task_fun, write = tasks[k]
        holder = write(task_fun(*task_args), holder)
    return holder


def test_the_nx_example_makes_four_tasks_that_fold_in_any_order():
    left, right = nx_inputs()
    _, tasks = spmd.shard_tasks(nx_fun, (left, right), [None, {4: [(0, 1), (1, 2)]}])
    assert len(tasks) == 4
    for task_args, _, _ in tasks:
        assert [a.shape for a in task_args] == [(1, 2, 3), (1, 1, 3, 2, 1)]
    expected = nx_fun(left, right, np)
    for order in itertools.permutations(range(4)):
        holder, tasks = spmd.shard_tasks(nx_fun, (left, right), [None, {4: [(0, 1), (1, 2)]}])
        np.testing.assert_array_equal(fold(holder, tasks, order), expected)


def test_task_args_are_views_of_exactly_the_slices_each_block_reads():
    left, right = nx_inputs()
    _, tasks = spmd.shard_tasks(nx_fun, (left, right), [None, {4: 2}])
    for task in tasks:
        for arg, (index, bounds) in zip(task.args, task.fun.reads, strict=True):
            source = (left, right)[index]
            assert np.shares_memory(arg, source)
            np.testing.assert_array_equal(arg, source[tuple(slice(a, b) for a, b in bounds)])


# --- the case table --------------------------------------------------------------------------


def table_rows(family: str):
    rng = np.random.default_rng([SEED, FAMILIES.index(family)])
    for case in CASES:
        # shard_tasks traces the function: eager-only rows (EAGER_ONLY) cannot run as tasks
        if case.family != family or case.error is not None or case.eager_only:
            continue
        bad = KNOWN_BUGS.get(case.id, ((), ""))[0]
        dtypes = [d for d in case.dtypes if d not in bad]
        if dtypes:
            yield case, dtypes[rng.integers(len(dtypes))], rng


def random_slicing(rng, finest: list[dict]) -> list:
    """One argument's dict cuts some of the axes that may be cut into a random count of
    parts or random ranges on the finest cut's edges; the others are None or {}."""
    chosen = rng.integers(len(finest)) if finest else None
    slicing = []
    for k, cuts in enumerate(finest):
        if k != chosen:
            slicing.append(None if rng.random() < 0.5 else {})
            continue
        entry = {}
        for axis, pieces in cuts.items():
            choice = rng.integers(3)
            if choice == 1:
                entry[axis] = int(rng.integers(1, len(pieces) + 1))
            elif choice == 2:
                edges = [a for a, _ in pieces[1:]]
                kept = sorted(rng.choice(edges, size=rng.integers(len(edges) + 1), replace=False))
                bounds = [0, *map(int, kept), pieces[-1][1]]
                entry[axis] = list(itertools.pairwise(bounds))
        slicing.append(entry)
    return slicing


def check_tasks(holder, tasks, expected, values=True):
    """Every output element is written by exactly one task, and the result equals NumPy's."""
    written = tree_map(lambda x: np.zeros(x.shape, int), holder)
    for task in tasks:
        counts = tree_leaves(written)
        for leaf, bounds in task.block:
            counts[leaf][tuple(slice(a, b) for a, b in bounds)] += 1
    assert all(np.all(c == 1) for c in tree_leaves(written)), "blocks do not tile the outputs"
    result = spmd.run_tasks(holder, tasks)
    assert_matches(tree_map(spmd.device_put, result), expected, values)


def run_row(case, dtype, rng) -> int:
    inputs = make_inputs(case, dtype)
    expected = numpy_result(case, inputs)

    def fun(*xs):
        return case.fn(snp, *xs)

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        holder, tasks = spmd.shard_tasks(fun, inputs)
        check_tasks(holder, tasks, expected, case.values)
        slicing = random_slicing(rng, tasks.cuts)
        try:
            holder, tasks = spmd.shard_tasks(fun, inputs, slicing)
        except spmd.ShardingError as error:  # a diagonal, its two axes cut differently
            assert "cuts them differently" in str(error), str(error)
            return 0
        check_tasks(holder, tasks, expected, case.values)
    return len(tasks)


@pytest.mark.parametrize("family", FAMILIES)
def test_table_rows_run_as_tasks_equal_numpy(family):
    failures, cut = [], 0
    for case, dtype, rng in table_rows(family):
        try:
            cut += run_row(case, dtype, rng) > 1
        except Exception as error:
            failures.append(f"{case.id} on {np.dtype(dtype or float).name}: {error!r:.400}")
    assert not failures, f"{len(failures)} rows differ:\n" + "\n".join(failures[:20])
    if family not in ("creation", "control"):  # control flow reads its operands whole
        assert cut > 10, "too few rows were cut into several tasks to test anything"


# --- programs --------------------------------------------------------------------------------


PROGRAMS = {  # programs whose dimensions tie in ways the case table's single calls do not
    "x @ x.T": (lambda m, x: x @ x.T, [(4, 6)]),
    "outer of two rows": (lambda m, x: m.outer(x[0], x[1]), [(4, 6)]),
    "pairwise distances": (lambda m, x: ((x[:, None] - x[None]) ** 2).sum(-1), [(5, 3)]),
    "x + x.T": (lambda m, x: x + x.T, [(5, 5)]),
    "diagonal of x @ x.T": (lambda m, x: m.einsum("ii->i", x @ x.T), [(5, 3)]),
    "an unused diagonal": (lambda m, x: (m.einsum("ii->i", x), x * 2)[1], [(3, 3)]),
    "rows times a broadcast column": (lambda m, x, c: m.tanh(x) * c, [(6, 4), (6, 1)]),
    "reshape both ways": (lambda m, x: (x.reshape(3, 8) + 1).reshape(6, 4) * 2, [(6, 4)]),
    "merged batch then matmul": (
        lambda m, x, w: (x.reshape(12, 5) @ w).reshape(3, 4, 2),
        [(3, 4, 5), (5, 2)],
    ),
    "transpose of a product": (lambda m, x, y: (x * y).T.sum(axis=0), [(4, 6), (4, 6)]),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_programs_cut_every_way_they_allow_tile_their_results_and_equal_numpy(name):
    fn, shapes = PROGRAMS[name]
    rng = np.random.default_rng([SEED, list(PROGRAMS).index(name)])
    inputs = [rng.standard_normal(shape) for shape in shapes]
    expected = fn(np, *inputs)
    holder, tasks = spmd.shard_tasks(lambda *xs: fn(snp, *xs), inputs)
    check_tasks(holder, tasks, expected)
    for _ in range(5):
        slicing = random_slicing(rng, tasks.cuts)
        holder, cut = spmd.shard_tasks(lambda *xs: fn(snp, *xs), inputs, slicing)
        check_tasks(holder, cut, expected)


def test_a_result_with_one_dimension_on_two_axes_is_not_cut():
    x = np.arange(24.0).reshape(4, 6)
    _, tasks = spmd.shard_tasks(lambda x: x @ x.T, (x,))
    assert len(tasks) == 1
    assert tasks.axes[0][0] == "whole: result 0 has it on axes 0 and 1"
    with pytest.raises(spmd.ShardingError, match="axis 0: result 0 has it on axes 0 and 1"):
        spmd.shard_tasks(lambda x: x @ x.T, (x,), [{0: 2}])


def test_a_random_key_is_read_whole():
    key = np.asarray(spmd.random.key(0))
    _, tasks = spmd.shard_tasks(lambda k: spmd.random.bits(k, (2,)) + k, (key,))
    assert len(tasks) == 1 and tasks.axes == [["whole: random_bits needs it whole"]]


def test_several_outputs_group_by_the_axes_they_keep():
    x, y = np.arange(12.0).reshape(4, 3), np.arange(5.0)

    def fun(x, y):
        return {"double": x * 2, "total": y.sum(), "rows": x.max(axis=1) + 1}

    holder, tasks = spmd.shard_tasks(fun, (x, y), [{0: 2}, None])
    # x * 2 and the row maxima by blocks of rows, two outputs per task; y.sum() once
    assert [len(task.block) for task in tasks] == [2, 2, 1]
    expected = {"double": x * 2, "total": y.sum(), "rows": x.max(axis=1) + 1}
    result = spmd.run_tasks(holder, tasks)
    for key, value in expected.items():
        np.testing.assert_array_equal(result[key], value)


def test_constants_and_iota_are_cut_per_block_and_broadcast_axes_are_not_copied():
    x, b = np.arange(24.0).reshape(4, 6), np.arange(6.0)[None, :]
    weights = np.linspace(0, 1, 6)

    def fun(x, b):
        return x * weights + b + snp.arange(6)

    holder, tasks = spmd.shard_tasks(fun, (x, b), [{0: 2, 1: 3}, None])
    assert len(tasks) == 6
    for task in tasks:
        (width,) = {a.shape[1] for a in task.args}
        assert [a.shape for a in task.args] == [(2, width), (1, width)]
        assert [c.shape for c in task.fun.program.consts] == [(width,)]
    np.testing.assert_array_equal(spmd.run_tasks(holder, tasks), x * weights + b + np.arange(6))


def test_a_reshape_cuts_along_the_major_dimension_in_whole_groups():
    x = np.arange(24.0).reshape(4, 6)

    def fun(x):
        return snp.sin(x.reshape(24)).reshape(8, 3)

    holder, tasks = spmd.shard_tasks(fun, (x,), [{0: 3}])
    assert [task.block[0][1] for task in tasks] == [((0, 4), (0, 3)), ((4, 6), (0, 3)),
                                                    ((6, 8), (0, 3))]  # fmt: skip
    np.testing.assert_allclose(spmd.run_tasks(holder, tasks), np.sin(x).reshape(8, 3))


def test_a_diagonal_reads_only_its_square_blocks():
    x = np.arange(36.0).reshape(6, 6)
    holder, tasks = spmd.shard_tasks(lambda x: snp.einsum("ii->i", x), (x,))
    assert len(tasks) == 6 and all(task.args[0].shape == (1, 1) for task in tasks)
    np.testing.assert_array_equal(spmd.run_tasks(holder, tasks), np.diagonal(x))


def test_random_numbers_are_the_same_however_the_program_is_cut():
    key = spmd.random.key(3)
    x = np.ones((8, 5))

    def fun(key, x):
        return x + spmd.random.uniform(key, x.shape)

    expected = np.asarray(spmd.jit(fun)(key, x))
    holder, tasks = spmd.shard_tasks(fun, (np.asarray(key), x), [None, {0: 3, 1: 2}])
    assert len(tasks) == 6
    np.testing.assert_array_equal(spmd.run_tasks(holder, tasks), expected)


def test_sharding_constraints_mean_nothing_in_a_task_and_shard_map_is_refused():
    mesh = spmd.make_mesh((8,), ("x",))
    x = np.arange(16.0)

    def constrained(x):
        pinned = spmd.lax.with_sharding_constraint(x * 2, spmd.NamedSharding(mesh, spmd.P("x")))
        return pinned + 1

    holder, tasks = spmd.shard_tasks(constrained, (x,), [{0: 4}])
    np.testing.assert_array_equal(spmd.run_tasks(holder, tasks), x * 2 + 1)
    mapped = spmd.shard_map(lambda b: b * 2, mesh=mesh, in_specs=spmd.P("x"), out_specs=spmd.P("x"))
    with pytest.raises(spmd.ShardingError, match=r"shard_map.*a task runs on one"):
        spmd.shard_tasks(mapped, (x,))


def test_explain_lists_each_task_and_what_it_reads():
    left, right = nx_inputs()
    _, tasks = spmd.shard_tasks(nx_fun, (left, right), [None, {4: [(0, 1), (1, 2)]}])
    text = tasks.explain()
    assert "axis 1: whole: einsum 'abc,bcd->ad' contracts it" in text
    assert "axis 4: cut in 2 (as slicing asks for argument 1 axis 4)" in text
    assert "task 3: output 0[1:2, 1:2] <- argument 0[1:2, 0:2, 0:3] 24 B" in text
    assert text.endswith("reads 192 B in all, 2.00x the arguments' 96 B")


# --- bad slicings ----------------------------------------------------------------------------

BAD_SLICINGS = [
    ([{3: 2}, None], "slicing\\[0\\] names axis 3, but argument 0 \\(f32\\[2,2,3\\]\\) has 3 axes"),
    ([None, {4: [(0, 1)]}], "slicing\\[1\\] axis 4: a gap: nothing covers \\[1:2\\]"),
    ([None, {4: [(1, 2)]}], "slicing\\[1\\] axis 4: a gap: nothing covers \\[0:1\\]"),
    ([None, {4: [(0, 2), (1, 2)]}], "slicing\\[1\\] axis 4: ranges overlap on \\[1:2\\]"),
    ([None, {4: [(0, 1), (1, 3)]}], "slicing\\[1\\] axis 4: the range \\(1, 3\\) lies outside"),
    ([None, {4: [(-1, 1), (1, 2)]}], "slicing\\[1\\] axis 4: the range \\(-1, 1\\) lies outside"),
    ([None, {4: [(0, 0), (0, 2)]}], "slicing\\[1\\] axis 4: the range \\(0, 0\\) is empty"),
    ([{1: 2}, None], "slicing\\[0\\] axis 1: cannot cut argument 0 .* einsum 'abc,bcd->ad' contra"),
    ([None, {2: [(0, 1), (1, 3)]}], "slicing\\[1\\] axis 2: cannot cut argument 1 .* contracts"),
    ([{0: 3}, None], "slicing\\[0\\] axis 0: 3 parts, but the axis has 2 elements"),
    ([{0: 0}, None], "slicing\\[0\\] axis 0: 0 parts"),
    ([None], "slicing has 1 entries but there are 2 arguments"),
    ([{0: 2, -3: 2}, None], "slicing\\[0\\] names axis 0 twice \\(as 0 and -3\\)"),
]


@pytest.mark.parametrize(("slicing", "message"), BAD_SLICINGS)
def test_bad_slicings_name_the_argument_and_the_axis(slicing, message):
    with pytest.raises(spmd.ShardingError, match=message):
        spmd.shard_tasks(nx_fun, nx_inputs(), slicing)


def test_mixing_by_cumsum_reductions_and_reshapes_is_named():
    x = np.ones((4, 6))
    for fun, axis, why in [
        (lambda x: snp.cumsum(x, axis=1), 1, "cumsum needs it whole"),
        (lambda x: x.sum(axis=0), 0, "reduce_sum reduces over it"),
        (lambda x: x.reshape(24), 1, "reshape merges it, as the minor part"),
    ]:
        with pytest.raises(spmd.ShardingError, match=f"axis {axis}: {why}"):
            spmd.shard_tasks(fun, (x,), [{axis: 2}])


def test_two_arguments_cut_differently_along_one_dimension_is_an_error():
    x = np.ones((6, 2))
    with pytest.raises(spmd.ShardingError, match="argument 1 axis 0 and argument 0 axis 0"):
        spmd.shard_tasks(lambda a, b: a + b, (x, x), [{0: 2}, {0: 3}])
    _, tasks = spmd.shard_tasks(lambda a: a.reshape(12), (x,), [{0: [(0, 3), (3, 6)]}])
    assert [task.block[0][1] for task in tasks] == [((0, 6),), ((6, 12),)]
    with pytest.raises(spmd.ShardingError, match="range \\(0, 3\\) splits a group of 4"):
        spmd.shard_tasks(lambda a: a.reshape(3, 2, 2), (np.ones(12),), [{0: [(0, 3), (3, 12)]}])


# --- executors -------------------------------------------------------------------------------


def mlp(x, w):
    return snp.tanh(x @ w) * 2 + 1


def mlp_inputs():
    rng = np.random.default_rng(SEED)
    return rng.standard_normal((64, 32)), rng.standard_normal((32, 16))


def test_tasks_pickle_without_the_callers_function():
    x, w = mlp_inputs()
    holder, tasks = spmd.shard_tasks(lambda x, w: mlp(x, w), (x, w), [{0: 4}, {1: 2}])
    copies = pickle.loads(pickle.dumps(tasks))
    assert len(copies) == 8 and copies.cuts == tasks.cuts
    np.testing.assert_allclose(spmd.run_tasks(holder, copies), np.tanh(x @ w) * 2 + 1)


@pytest.fixture(scope="module")
def process_pool():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.mark.parametrize("executor", ["threads", "processes"])
def test_run_tasks_on_an_executor(executor, process_pool):
    x, w = mlp_inputs()
    holder, tasks = spmd.shard_tasks(mlp, (x, w), [{0: 5}, None])
    if executor == "threads":
        with ThreadPoolExecutor(3) as pool:
            result = spmd.run_tasks(holder, tasks, pool)
    else:
        result = spmd.run_tasks(holder, tasks, process_pool)
    np.testing.assert_allclose(result, np.tanh(x @ w) * 2 + 1)


def test_table_rows_run_in_worker_processes(process_pool):
    rng = np.random.default_rng(SEED)
    rows = [c for c in CASES if c.error is None and c.values and c.family != "creation"
            and not c.eager_only]  # fmt: skip
    for k in rng.choice(len(rows), 40, replace=False):
        case = rows[k]
        inputs = make_inputs(case, case.dtypes[0])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = numpy_result(case, inputs)
            holder, tasks = spmd.shard_tasks(lambda *xs, case=case: case.fn(snp, *xs), inputs)
            result = spmd.run_tasks(holder, tasks, process_pool)
        assert_matches(tree_map(spmd.device_put, result), expected)


def test_a_failing_task_names_its_block_and_carries_the_error(process_pool):
    x, w = mlp_inputs()
    holder, tasks = spmd.shard_tasks(mlp, (x, w), [{0: 4}, {}])
    broken = tasks[2]._replace(args=(x[:3], w))
    tasks[2] = broken
    for executor in (None, process_pool):
        with pytest.raises(spmd.TaskError, match=r"task 2 \(output 0\[32:48, 0:16\]\)") as info:
            spmd.run_tasks(holder, tasks, executor)
        assert info.value.block == ((0, ((32, 48), (0, 16))),)
        assert isinstance(info.value.original, spmd.ShapeError)
        assert info.value.__cause__ is info.value.original


def test_run_tasks_on_a_dask_cluster_of_two_worker_processes():
    distributed = pytest.importorskip("distributed")
    x, w = mlp_inputs()
    left, right = nx_inputs()
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert len(client.scheduler_info()["workers"]) == 2
        holder, tasks = spmd.shard_tasks(mlp, (x, w), [{0: 4}, {1: 2}])
        result = spmd.run_tasks(holder, tasks, client.get_executor())
        np.testing.assert_allclose(result, np.tanh(x @ w) * 2 + 1)
        holder, tasks = spmd.shard_tasks(nx_fun, (left, right), [None, {4: 2}])
        result = spmd.run_tasks(holder, tasks, client.get_executor())
        np.testing.assert_array_equal(result, nx_fun(left, right, np))


def test_a_task_writes_its_chain_into_its_own_intermediates_never_its_arguments():
    from spmd.core.interpret import buffer_reuse

    x = np.linspace(-2, 2, 48).reshape(6, 8)
    before = x.copy()

    def chain(x):
        return snp.sin(x * 2 + 1) * 3 - x

    holder, tasks = spmd.shard_tasks(chain, (x,), [{0: 3}])
    program = tasks[0].fun.program
    last_use, reuse = buffer_reuse(program)
    assert sorted(reuse) == [1, 2, 3, 4]  # each step after x * 2 writes into its operand
    for index, k in reuse.items():
        operand = program.equations[index].inputs[k]
        assert operand not in program.invars and last_use[operand] == index
    np.testing.assert_allclose(spmd.run_tasks(holder, tasks), np.sin(x * 2 + 1) * 3 - x)
    np.testing.assert_array_equal(x, before)


class RecordingProcessPool(ProcessPoolExecutor):
    def __init__(self, workers: int) -> None:
        super().__init__(workers, mp_context=multiprocessing.get_context("spawn"))
        self.submitted = []

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(fn)
        return super().submit(fn, *args, **kwargs)


def test_tasks_on_a_pool_of_this_host_share_its_cores_among_the_workers(monkeypatch):
    from spmd.transforms import tasks as tasks_module

    limits = []
    real = tasks_module.blas_threads

    def recording(threads):
        limits.append(threads)
        return real(threads)

    monkeypatch.setattr(tasks_module, "blas_threads", recording)
    spmd.config.update("cpu_cores", 6)
    try:
        x, w = mlp_inputs()
        holder, tasks = spmd.shard_tasks(mlp, (x, w), [{0: 4}, {}])
        with ThreadPoolExecutor(2) as pool:
            spmd.run_tasks(holder, tasks, pool)
        assert limits == [3]  # one process-wide limit around the threads
        with RecordingProcessPool(3) as pool:
            result = spmd.run_tasks(holder, tasks, pool)
        assert [(type(f).__name__, f.threads) for f in pool.submitted] == [("BlasLimited", 2)] * 4
        np.testing.assert_allclose(result, np.tanh(x @ w) * 2 + 1)
    finally:
        spmd.config.update("cpu_cores", None)


def test_a_result_that_does_not_fit_its_block_is_a_task_error():
    x, w = mlp_inputs()
    holder, tasks = spmd.shard_tasks(mlp, (x, w), [{0: 3}, {}])  # blocks of 22, 21, 21 rows
    tasks[0] = tasks[0]._replace(fun=tasks[1].fun, args=tasks[1].args)
    with pytest.raises(spmd.TaskError, match=r"task 0 \(output 0\[0:22, 0:16\]\) failed: Sh"):
        spmd.run_tasks(holder, tasks)


def test_too_many_tasks_are_refused_at_once_with_a_slicing_that_fits():
    x = np.ones((1000, 1000))
    with pytest.raises(spmd.errors.ShardingError, match="1000000 tasks, more than max_tasks=4096"):
        spmd.shard_tasks(lambda a: a * 2, (x,))
    try:
        spmd.shard_tasks(lambda a: a * 2, (x,))
    except spmd.errors.ShardingError as error:
        suggested = eval(str(error).split("slicing=")[1].split(" (")[0])  # the advice, run
    holder, tasks = spmd.shard_tasks(lambda a: a * 2, (x,), suggested)
    assert len(tasks) <= 4096
    np.testing.assert_array_equal(spmd.run_tasks(holder, tasks), x * 2)
    _, few = spmd.shard_tasks(lambda a: a * 2, (np.ones((3, 2)),), max_tasks=6)
    assert len(few) == 6
    with pytest.raises(spmd.errors.ShardingError, match="6 tasks, more than max_tasks=5"):
        spmd.shard_tasks(lambda a: a * 2, (np.ones((3, 2)),), max_tasks=5)
