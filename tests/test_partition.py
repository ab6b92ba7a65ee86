"""Sharded runs under jit: the partitioner (propagation, resharding plans, executor) against NumPy.

Every non-error row of the case table runs on meshes of 1, 8, 2x4 and 2x2x2 devices with a
random PartitionSpec for each array input (now and then a NumPy input left on the host, or an
``out_shardings``), drawn from a seeded NumPy Generator: ``SPMD_PARTITION_SEED`` picks another
sample. The table's small shapes (0, 2, 3, 4, 5 against 2-, 4- and 8-way splits) give uneven
and empty blocks; a check below keeps them well represented. Results must equal NumPy's, be
NamedSharding Arrays on the mesh, and every shard must hold its slice of NumPy's result.
Eager-only rows (unique_values, nonzero without size=: EAGER_ONLY in tests/cases/table.py)
run eagerly on the sharded inputs instead. Then: the JAX tutorial's checks, collective
counts, partial sums that flow through linear equations, and random sharded programs
(resharding plans: tests/test_reshard.py).
"""

from __future__ import annotations

import math
import os
import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import Mesh, NamedSharding, P
from spmd.debug import count_collectives
from tests.backend import needs_missing_dtype, refused_by_backend
from tests.cases import (
    FAMILIES,
    KNOWN_BUGS,
    Case,
    assert_matches,
    cases_for,
    make_input,
    make_inputs,
    numpy_result,
    shape_preserving,
)
from tests.test_programs import into_domain

SEED = int(os.environ.get("SPMD_PARTITION_SEED", "0"))
MESHES = {  # id: (shape, axis names)
    "1": ((1,), ("x",)),
    "8": ((8,), ("x",)),
    "2x4": ((2, 4), ("x", "y")),
    "2x2x2": ((2, 2, 2), ("x", "y", "z")),
}
SHARDED = ("8", "2x4", "2x2x2")


def mesh_of(key: str) -> Mesh:
    shape, names = MESHES[key]
    grid = np.empty(math.prod(shape), dtype=object)
    grid[:] = spmd.devices()[: grid.size]
    return Mesh(grid.reshape(shape), names)


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng([SEED, *(zlib.crc32(str(k).encode()) for k in key)])


def random_spec(rng: np.random.Generator, mesh: Mesh, ndim: int) -> P:
    """Each dimension None, one mesh axis or a tuple of them (every axis at most once)."""
    unused = list(rng.permutation(mesh.axis_names))
    entries = []
    for _ in range(ndim):
        if not unused or rng.random() < 0.3:
            entries.append(None)
            continue
        take = 1 if rng.random() < 0.6 else int(rng.integers(1, len(unused) + 1))
        axes, unused = unused[:take], unused[take:]
        entries.append(str(axes[0]) if take == 1 and rng.random() < 0.7 else tuple(map(str, axes)))
    return P(*entries)


def put(x: np.ndarray, mesh: Mesh, spec: P):
    return spmd.device_put(x, NamedSharding(mesh, spec))


def leaves(x) -> list:
    return list(x) if isinstance(x, list | tuple) else [x]


def tolerance_scale(expected) -> float:
    """float16 results of sharded reductions round each device's partial to float16 (2^-11
    of values up to a few times the result) before combining them: allow a few of those."""
    return 8 if any(np.asarray(e).dtype == np.float16 for e in leaves(expected)) else 1


def assert_valid_array(result, expected, mesh: Mesh | None, values: bool, scale: float) -> None:
    """``result`` is on ``mesh`` (when given) and each of its shards is its slice of NumPy's."""
    for got, want in zip(leaves(result), leaves(expected), strict=True):
        want = np.asarray(want)
        if mesh is not None:
            assert isinstance(got.sharding, NamedSharding), got.sharding
            assert got.sharding.mesh == mesh, got.sharding
        whole = np.asarray(got)
        for shard in got.addressable_shards:
            data = np.asarray(shard.data)
            assert data.shape == want[shard.index].shape, (shard.device, shard.index, data.shape)
            if values:
                assert_matches(shard.data, want[shard.index], values, scale)
                np.testing.assert_array_equal(data, whole[shard.index])  # replicas agree


def splits(mesh: Mesh, shape: tuple[int, ...], spec: P) -> tuple[bool, bool]:
    """Whether a ``shape`` array laid out as ``spec`` has uneven blocks, and empty ones."""
    uneven = empty = False
    for n, axes in zip(shape, spec.dims(len(shape)), strict=True):
        k = math.prod(mesh.shape[a] for a in axes)
        uneven |= n % k != 0
        empty |= k > 1 and -(-n // k) * (k - 1) >= n
    return uneven, empty


# ------------------------------------------------------------------ rows of the case table


def _rows(family: str) -> list[tuple[Case, tuple]]:
    """The family's non-error rows, each with the dtypes it runs right on."""
    rows = []
    for case in cases_for(family=family):
        bad = KNOWN_BUGS.get(case.id, ((), ""))[0]
        dtypes = tuple(d for d in case.dtypes if d not in bad)
        if dtypes:
            rows.append((case, dtypes))
    return rows


@dataclass
class Draw:
    """One (row, mesh, layouts) combination: what a run of the row is given."""

    dtype: object
    inputs: list
    expected: object
    specs: list  # a PartitionSpec per input
    host: list  # per input: left a NumPy array (on the host)
    out: P | None  # out_shardings' spec, or None

    def __str__(self) -> str:
        name = "nodtype" if self.dtype is None else np.dtype(self.dtype).name
        return f"on {name}: specs {self.specs}, host {self.host}, out_shardings {self.out}"


def draw_row(case: Case, dtypes: tuple, mesh: Mesh, rng: np.random.Generator) -> Draw:
    """A dtype, a random spec per input, now and then a NumPy input left on the host, and
    now and then (always, for rows without array inputs) an ``out_shardings``."""
    dtype = dtypes[rng.integers(len(dtypes))]
    inputs = make_inputs(case, dtype)
    expected = numpy_result(case, inputs)
    specs = [random_spec(rng, mesh, x.ndim) for x in inputs]
    host = [bool(rng.random() < 0.1) for _ in inputs]
    out = None
    single = not isinstance(expected, list | tuple)
    if single and (all(host) or rng.random() < 0.15):  # all([]): no inputs
        out = random_spec(rng, mesh, np.ndim(expected))
    return Draw(dtype, inputs, expected, specs, host, out)


def sampled_rows(mesh_id: str, family: str):
    """The test's draws for one mesh and family, reproducible from ``SEED``."""
    mesh, rng = mesh_of(mesh_id), rng_for("rows", mesh_id, family)
    for case, dtypes in _rows(family):
        yield case, draw_row(case, dtypes, mesh, rng)


def run_sharded_row(case: Case, draw: Draw, mesh: Mesh) -> None:
    """The row under jit on the draw's inputs; an eager-only row (EAGER_ONLY in
    tests/cases/table.py) eagerly, where there is no out_shardings: its result, wherever it
    lies, must equal NumPy's, shard by shard."""
    args = [
        x if on_host else put(x, mesh, spec)
        for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
    ]
    target = None if draw.out is None else NamedSharding(mesh, draw.out)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if case.eager_only:
            result = case.fn(snp, *args)
        else:
            result = spmd.jit(lambda *a: case.fn(snp, *a), out_shardings=target)(*args)
    scale = tolerance_scale(draw.expected)
    assert_matches(result, draw.expected, case.values, scale)
    if case.eager_only:
        assert_valid_array(result, draw.expected, None, case.values, scale)
        return
    on_mesh = draw.out is not None or not all(draw.host)
    assert_valid_array(result, draw.expected, mesh if on_mesh else None, case.values, scale)
    if draw.out is not None:
        assert result.sharding.spec.dims(result.ndim) == draw.out.dims(result.ndim)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mesh_id", list(MESHES))
def test_rows_match_numpy_on_sharded_inputs(mesh_id, family):
    mesh = mesh_of(mesh_id)
    failures = []
    for case, draw in sampled_rows(mesh_id, family):
        try:
            run_sharded_row(case, draw, mesh)
        except Exception as error:
            if refused_by_backend(error) and needs_missing_dtype(draw.inputs, draw.expected):
                continue
            failures.append(f"{case.id} {draw}: {type(error).__name__}: {error}")
    if failures:
        pytest.fail(
            f"{len(failures)} rows of {family} differ on mesh {mesh_id} (seed {SEED}):\n"
            + "\n".join(failures),
            pytrace=False,
        )


def test_the_row_sample_covers_every_function_with_uneven_and_empty_blocks():
    """Every function runs on every sharded mesh, and uneven and empty blocks are common."""
    counts = {"combos": 0, "uneven": 0, "empty": 0, "host": 0, "out_shardings": 0}
    for mesh_id in SHARDED:
        mesh = mesh_of(mesh_id)
        names = set()
        for family in FAMILIES:
            for case, draw in sampled_rows(mesh_id, family):  # the draws of the test above
                names.add(case.name)
                counts["combos"] += 1
                found = [
                    splits(mesh, x.shape, spec)
                    for x, spec, on_host in zip(draw.inputs, draw.specs, draw.host, strict=True)
                    if not on_host
                ]
                counts["uneven"] += any(u for u, _ in found)
                counts["empty"] += any(e for _, e in found)
                counts["host"] += any(draw.host)
                counts["out_shardings"] += draw.out is not None
        assert names == {case.name for case in cases_for()}
    assert counts["combos"] > 3000, counts
    assert counts["uneven"] > 0.3 * counts["combos"], counts
    assert counts["empty"] > 0.15 * counts["combos"], counts
    assert min(counts["host"], counts["out_shardings"]) > 0.1 * counts["combos"], counts


def _same_shape_elementwise_rows() -> list[tuple[Case, tuple]]:
    """Elementwise rows whose inputs all have one shape, of at least one dimension."""
    rows = []
    for case, dtypes in _rows("elementwise"):
        shapes = set(case.shapes)
        if not case.indices and len(shapes) == 1 and next(iter(shapes)):
            rows.append((case, dtypes))
    return rows


@pytest.mark.parametrize("mesh_id", SHARDED)
def test_elementwise_on_matching_shardings_moves_nothing(mesh_id):
    mesh = mesh_of(mesh_id)
    rng = rng_for("elementwise", mesh_id)
    checked = 0
    for case, dtypes in _same_shape_elementwise_rows():
        dtype = dtypes[rng.integers(len(dtypes))]
        inputs = make_inputs(case, dtype)
        expected = numpy_result(case, inputs)
        if np.shape(expected) != inputs[0].shape or needs_missing_dtype(inputs, expected):
            continue
        spec = random_spec(rng, mesh, inputs[0].ndim)
        args = [put(x, mesh, spec) for x in inputs]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with count_collectives() as counts:
                result = spmd.jit(lambda *a, case=case: case.fn(snp, *a))(*args)
        assert counts.total == 0, (case.id, spec, counts)
        assert result.sharding.spec.dims(result.ndim) == spec.dims(result.ndim), (case.id, spec)
        assert_matches(result, expected, case.values)
        checked += 1
    assert checked > 200


# ------------------------------------------------------------------ the JAX tutorial


def test_sum_over_a_2d_sharded_array():
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    x = put(np.arange(32.0).reshape(4, 8), mesh, P("x", "y"))
    f = spmd.jit(lambda v: v.sum(axis=0))
    with count_collectives() as counts:
        result = f(x)
    assert result.tolist() == [48.0, 52.0, 56.0, 60.0, 64.0, 68.0, 72.0, 76.0]
    assert result.sharding == NamedSharding(mesh, P("y"))
    assert counts["all-reduce"] == 1 and counts.total == 1
    assert "all-reduce over ('x')" in f.lower(x).explain()
    assert "all_reduce" in f.lower(x).as_text()
    assert_valid_array(result, np.arange(32.0).reshape(4, 8).sum(0), mesh, True, 1)


@pytest.mark.parametrize("where", ["host", "mesh"])
def test_with_sharding_constraint_puts_one_element_on_each_device(where):
    mesh = spmd.make_mesh((8,), ("x",))
    x = np.arange(32.0).reshape(4, 8)
    arg = x if where == "host" else put(x, mesh, P(None, "x"))
    constraint = NamedSharding(mesh, P("x"))
    f = spmd.jit(lambda v: spmd.lax.with_sharding_constraint(v.sum(axis=0), constraint))
    result = f(arg)
    assert result.tolist() == [48.0, 52.0, 56.0, 60.0, 64.0, 68.0, 72.0, 76.0]
    assert result.sharding == constraint
    shards = result.addressable_shards
    assert len(shards) == 8
    for shard in shards:
        assert shard.data.shape == (1,)
        assert np.asarray(shard.data).tolist() == x.sum(0)[shard.index].tolist()
    assert sorted(s.index[0].start for s in shards) == list(range(8))


def test_a_sigmoid_layer_gives_the_same_numbers_however_it_is_sharded():
    mesh = spmd.make_mesh((8,), ("x",))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 24))
    w = rng.normal(size=(24, 6))
    b = rng.normal(size=(6,))
    layer = spmd.jit(lambda x, w, b: spmd.nn.sigmoid(x @ w + b))
    expected = 1 / (1 + np.exp(-(x @ w + b)))
    unsharded = layer(x, w, b)
    batch = layer(put(x, mesh, P("x", None)), put(w, mesh, P()), put(b, mesh, P()))
    with count_collectives() as counts:
        contracting = layer(put(x, mesh, P(None, "x")), put(w, mesh, P("x", None)), b)
    for result in (unsharded, batch, contracting):
        assert_matches(result, expected)
    np.testing.assert_allclose(np.asarray(batch), np.asarray(unsharded), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(contracting), np.asarray(unsharded), rtol=1e-12)
    assert batch.sharding.spec == P("x")  # the batch stays split
    assert counts["all-reduce"] + counts["reduce-scatter"] == 1 and counts.total == 1
    assert_valid_array(batch, expected, mesh, True, 1)
    assert_valid_array(contracting, expected, mesh, True, 1)


def test_tanh_then_matmul_by_the_transpose_on_row_sharded_x():
    """JAX rejects this sharding (it cannot propagate through x.T); spmd gathers once."""
    mesh = spmd.make_mesh((8,), ("x",))
    x = np.random.default_rng(1).normal(size=(16, 5))
    f = spmd.jit(lambda v: snp.tanh(v) @ v.T)
    with count_collectives() as counts:
        result = f(put(x, mesh, P("x")))
    assert_matches(result, np.tanh(x) @ x.T)
    assert result.sharding.spec == P("x")  # rows stay where they are
    assert counts.total == 1 and counts["all-gather"] == 1
    assert_valid_array(result, np.tanh(x) @ x.T, mesh, True, 1)


@pytest.mark.parametrize(
    ("after", "collective"), [(lambda v: v, "all-reduce"), (snp.tanh, "reduce-scatter")]
)
def test_matmul_sharded_on_the_contracting_axis_leaves_one_pending_sum(after, collective):
    mesh = spmd.make_mesh((2, 4), ("x", "y"))
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(8, 16)), rng.normal(size=(16, 4))
    f = spmd.jit(lambda a, b: after(a @ b))
    args = put(a, mesh, P(None, "y")), put(b, mesh, P("y", None))
    with count_collectives() as counts:
        result = f(*args)
    expected = np.asarray(after(a @ b)) if after is not snp.tanh else np.tanh(a @ b)
    assert_matches(result, expected)
    assert counts[collective] == 1 and counts.total == 1, counts
    explained = f.lower(*args).explain()
    assert "pending sum over 'y'" in explained
    assert f"{collective} over ('y')" in explained
    assert_valid_array(result, expected, mesh, True, 1)


def test_reshaping_a_2d_sharded_array_to_1d_moves_nothing():
    mesh = spmd.make_mesh((4, 2), ("x", "y"))
    x = np.arange(32.0).reshape(4, 8)
    f = spmd.jit(lambda v: v.reshape(32))
    with count_collectives() as counts:
        result = f(put(x, mesh, P("x", "y")))
    assert counts.total == 0
    assert result.sharding == NamedSharding(mesh, P(("x", "y")))
    assert result.tolist() == list(range(32))
    assert_valid_array(result, x.reshape(32), mesh, True, 1)
    assert (
        "none: every operand already lies where its equation runs"
        in f.lower(put(x, mesh, P("x", "y"))).explain()
    )


# ------------------------------------------------------------------ programs

PROGRAMS = {  # name: fn(m, x (i, j), y (j, k), v (k,)), written once for NumPy and spmd.numpy
    "layer": lambda m, x, y, v: 1 / (1 + m.exp(-(x @ y + v))),
    "sum then scale": lambda m, x, y, v: (x @ y).sum(axis=0) * v,
    "scaled operand": lambda m, x, y, v: x @ (y * v),
    "max plus min": lambda m, x, y, v: (x @ y).max(axis=1) + (x @ y).min(axis=1),
    "flatten": lambda m, x, y, v: (x @ y).reshape(-1) * 2 - 1,
    "mean": lambda m, x, y, v: (x @ y).mean(axis=0) - v,
    "slices": lambda m, x, y, v: (x @ y)[1:, ::2].sum(axis=1),
    "concatenate": lambda m, x, y, v: m.concatenate([x @ y, (x @ y) * 2], axis=0).sum(axis=0),
    "gram": lambda m, x, y, v: (x.T @ x) @ y,
    "two partial sums": lambda m, x, y, v: (x @ y) * 2 - (x @ y) / 3,
    "square": lambda m, x, y, v: ((x @ y) * (x @ y)).sum(),
    "quotient": lambda m, x, y, v: (x @ y) / (1 + v * v),
    "keepdims": lambda m, x, y, v: (x @ y).sum(axis=1, keepdims=True) * (x @ y),
    "chain": lambda m, x, y, v: m.einsum("ij,jk,k->i", x, y, v),
    "transpose": lambda m, x, y, v: (x @ y).T @ x,
    "boolean": lambda m, x, y, v: ((x > 0) @ (y > 0)) * 3 + ((x > 0) @ (y > 0)).sum(),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_partial_sums_through_programs(name):
    """Partial sums pass through linear equations, elsewhere they resolve; either way the
    values are NumPy's, on random layouts and uneven shapes, with random out_shardings."""
    rng = rng_for("programs", name)
    fn = PROGRAMS[name]
    f = spmd.jit(lambda x, y, v: fn(snp, x, y, v))
    for _ in range(20):
        mesh = mesh_of(SHARDED[rng.integers(len(SHARDED))])
        i, j, k = (int(rng.choice((2, 3, 4, 5, 8, 13))) for _ in range(3))
        xs = [rng.integers(-3, 4, size=s).astype(np.float64) for s in ((i, j), (j, k), (k,))]
        specs = [random_spec(rng, mesh, x.ndim) for x in xs]
        expected = fn(np, *xs)
        args = [put(x, mesh, s) for x, s in zip(xs, specs, strict=True)]
        what = (dict(mesh.shape), (i, j, k), specs)
        try:
            if rng.random() < 0.3:
                out = NamedSharding(mesh, random_spec(rng, mesh, np.ndim(expected)))
                result = spmd.jit(lambda x, y, v: fn(snp, x, y, v), out_shardings=out)(*args)
                assert result.sharding == out
            else:
                result = f(*args)
            assert_matches(result, expected)
            assert_valid_array(result, expected, mesh, True, 1)
        except AssertionError as error:
            raise AssertionError(f"{what}: {error}") from None


PROGRAM_SHAPES = ((5, 13), (13, 3), (8, 5))
STEPS = {shape: shape_preserving(shape) for shape in PROGRAM_SHAPES}


def random_program(seed: int):
    """A chain of 2-7 shape-preserving rows on an uneven shape, with sharding constraints
    between some steps, arguments on random layouts and random out_shardings."""
    rng = rng_for("chain", seed)
    shape = PROGRAM_SHAPES[rng.integers(len(PROGRAM_SHAPES))]
    names = sorted({case.name for _, case in STEPS[shape]})
    mesh = mesh_of(SHARDED[rng.integers(len(SHARDED))])
    steps = []
    for _ in range(rng.integers(2, 8)):
        name = names[rng.integers(len(names))]
        rows = [step for step in STEPS[shape] if step[1].name == name]
        constraint = random_spec(rng, mesh, 2) if rng.random() < 0.3 else None
        steps.append((*rows[rng.integers(len(rows))], constraint))

    def run(m, x, w):
        for kind, case, constraint in steps:
            if constraint is not None and m is snp:
                x = spmd.lax.with_sharding_constraint(x, NamedSharding(mesh, constraint))
            v = into_domain(m, x, case.domain)
            out = case.fn(m, *[v, into_domain(m, w, case.domain)][: len(case.shapes)])
            x = out if kind == "map" else v - out
        return x

    specs = [random_spec(rng, mesh, 2) for _ in range(2)]
    out = NamedSharding(mesh, random_spec(rng, mesh, 2)) if rng.random() < 0.3 else None
    ids = [(case.id, constraint) for _, case, constraint in steps]
    return shape, mesh, specs, out, run, ids


@pytest.mark.parametrize("seed", range(40))
def test_random_sharded_programs_match_numpy(seed):
    shape, mesh, specs, out, run, ids = random_program(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    x, w = (make_input(shape, dtype, 2000 + 2 * seed + i) for i in range(2))
    with np.errstate(all="ignore"):
        expected = run(np, x, w)
        result = spmd.jit(lambda a, b: run(snp, a, b), out_shardings=out)(
            put(x, mesh, specs[0]), put(w, mesh, specs[1])
        )
    try:
        assert_matches(result, expected, scale=10)
        assert_valid_array(result, expected, mesh, True, 10)
        if out is not None:
            assert result.sharding == out
    except AssertionError as error:
        raise AssertionError(f"{dict(mesh.shape)} {shape} {specs} {ids}: {error}") from None


# ------------------------------------------------------------------ executor regressions


@pytest.mark.parametrize(
    ("shape", "names", "held", "wanted"),
    [((8,), ("x",), P(), P("x")), ((2, 4), ("x", "y"), P(("x", "y")), P(("y", "x")))],
    ids=["local slice", "permute"],
)
def test_a_resharded_view_survives_an_in_place_update_of_its_source(shape, names, held, wanted):
    mesh = spmd.make_mesh(shape, names)

    def f(v):
        a = v + 1
        return spmd.lax.with_sharding_constraint(a, NamedSharding(mesh, wanted)), a * 3

    viewed, tripled = spmd.jit(f)(put(np.arange(8.0), mesh, held))
    assert np.asarray(tripled).tolist() == [3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0]
    assert np.asarray(viewed).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


@pytest.mark.parametrize("mode", ["jit", "eager"])
def test_a_python_scalar_operand_keeps_the_shards_dtype(mode):
    mesh = spmd.make_mesh((8,), ("x",))
    x = put(np.arange(8, dtype=np.float32), mesh, P("x"))
    result = spmd.jit(lambda v, s: v * s)(x, 2.5) if mode == "jit" else x * 2.5
    assert result.dtype == np.float32
    assert {shard.data.dtype for shard in result.addressable_shards} == {np.dtype(np.float32)}


def test_partial_sums_meet_infinities_zeros_and_narrowing_as_numpy_does():
    """A partial sum is 0 on a device whose block is empty: times infinity that is NaN, so
    pending sums pass products and quotients only by finite non-zero constants."""
    mesh = spmd.make_mesh((8,), ("x",))
    x = np.arange(1.0, 6.0)  # 5 over 8 devices: three empty blocks
    inf, zeros = np.array(np.inf), np.zeros(5)
    programs = [
        (lambda v, w: v.sum() * w, inf),
        (lambda v, w: (v.sum() * w).sum(), put(np.full(3, np.inf), mesh, P("x"))),
        (lambda v, w: v.sum() / w, zeros),
        (lambda v, w: -(v.sum() * 2.5) / 4, inf),
        (lambda v, w: (v[None, :] @ np.full((5, 2), np.inf)) + w.sum(), zeros),
    ]
    for fn, w in programs:
        with np.errstate(all="ignore"):
            expected = fn(x, np.asarray(w))
            result = spmd.jit(fn)(put(x, mesh, P("x")), w)
        assert_matches(result, expected)
    a = np.array([[4e38, -4e38]])  # partials overflow float32, the sum does not
    narrowed = spmd.jit(lambda a, b: (a @ b).astype(np.float32))(
        put(a, mesh, P(None, "x")), put(np.ones((2, 1)), mesh, P("x"))
    )
    assert np.asarray(narrowed).tolist() == [[0.0]]
