"""``x.at[index]`` with traced or spmd integer scalars in the index (under jit, and in a
shard_map body with ``axis_index``), checked against NumPy on the concrete index: an
in-bounds index updates as ``ufunc.at`` does, an out-of-bounds one updates nothing (JAX's
scatter default), and ``get`` clamps (JAX's gather default)."""

from __future__ import annotations

import numpy as np
import pytest

import spmd
import spmd.numpy as jnp

UFUNCS = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
OPS = ["set", *UFUNCS]


def numpy_update(x: np.ndarray, index: tuple, op: str, values) -> np.ndarray:
    """``x.at[index].<op>(values)`` on concrete integer indices, as JAX computes it."""
    expected = x.copy()
    for axis, entry in enumerate(index):
        if isinstance(entry, int) and not -x.shape[axis] <= entry < x.shape[axis]:
            return expected  # out of bounds: the update is dropped
    if op == "set":
        expected[index] = values
    else:
        UFUNCS[op].at(expected, index, values)
    return expected


def numpy_get(x: np.ndarray, index: tuple) -> np.ndarray:
    """``x.at[index].get()`` as JAX computes it: integer entries clamped into range."""
    clamped = tuple(
        int(np.clip(e, -n, n - 1)) if isinstance(e, int) else e
        for e, n in zip(index, x.shape, strict=False)
    )
    return x[clamped]


def apply(x, index: tuple, op: str, values):
    chosen = x.at[index]
    return chosen.get() if op == "get" else getattr(chosen, op)(values)


# (index pattern with "i"/"j" standing for the traced arguments, x's shape)
PATTERNS = [
    (("i",), (5,)),
    (("i", slice(None)), (3, 4)),
    (("i",), (3, 4)),  # missing trailing entries mean ':'
    ((slice(None), "j"), (3, 4)),
    (("i", "j"), (3, 4)),
    ((1, "j"), (3, 4)),  # a static integer beside a traced one
]
# (i, j): in bounds, negative, out of bounds above and below
POSITIONS = [(1, 2), (-1, -4), (3, 4), (-4, -5), (7, 9)]


def concrete(pattern: tuple, i: int, j: int) -> tuple:
    return tuple({"i": i, "j": j}.get(e, e) if isinstance(e, str) else e for e in pattern)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("pattern, shape", PATTERNS)
@pytest.mark.parametrize("i, j", POSITIONS)
def test_update_with_traced_index_matches_numpy(op, pattern, shape, i, j):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    index = concrete(pattern, i, j)
    values_shape = np.empty(shape)[concrete(pattern, 0, 0)].shape
    values = rng.standard_normal(values_shape).astype(np.float32)

    @spmd.jit
    def update(x, values, i, j):
        return apply(x, concrete(pattern, i, j), op, values)

    result = update(x, values, i, j)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, numpy_update(x, index, op, values))


@pytest.mark.parametrize("pattern, shape", PATTERNS)
@pytest.mark.parametrize("i, j", POSITIONS)
def test_get_with_traced_index_clamps_like_jax(pattern, shape, i, j):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    result = spmd.jit(lambda x, i, j: x.at[concrete(pattern, i, j)].get())(x, i, j)
    np.testing.assert_array_equal(result, numpy_get(x, concrete(pattern, i, j)))


def test_scalar_values_broadcast_and_dtype_of_x_is_kept():
    x = np.zeros((3, 4), np.int32)
    result = spmd.jit(lambda x, i: x.at[i, :].add(2.7))(x, 1)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, [[0] * 4, [2] * 4, [0] * 4])


def test_concrete_spmd_scalar_index_updates_eagerly():
    x = jnp.zeros(4)
    np.testing.assert_array_equal(x.at[jnp.asarray(2)].set(5.0), [0, 0, 5, 0])
    np.testing.assert_array_equal(x.at[jnp.asarray(-1)].add(1.0), [0, 0, 0, 1])
    np.testing.assert_array_equal(x.at[jnp.asarray(4)].add(1.0), [0, 0, 0, 0])


@pytest.fixture
def mesh():
    return spmd.make_mesh((4,), ("i",))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("op", OPS)
def test_shard_map_body_updates_its_own_position(mesh, op, jit):
    x = np.random.default_rng(1).standard_normal(16).astype(np.float32)

    def body(block):
        return apply(block, (spmd.lax.axis_index("i"),), op, 3.0)

    f = spmd.shard_map(body, mesh=mesh, in_specs=spmd.P("i"), out_specs=spmd.P("i"))
    result = (spmd.jit(f) if jit else f)(x)
    expected = np.concatenate(
        [numpy_update(b, (k,), op, 3.0) for k, b in enumerate(x.reshape(4, 4))]
    )
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_shard_map_body_2d_rows_columns_and_elements(mesh, jit):
    # blocks of 2 rows: devices 2 and 3 name rows out of bounds, so their rows are unchanged
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    row = np.array([-1.0, -2.0, -3.0], np.float32)

    def body(block):
        k = spmd.lax.axis_index("i")
        block = block.at[k, :].set(row)
        block = block.at[:, k - 1].multiply(10.0)  # device 0: column -1, the last
        return block.at[k % 2, k % 3].add(0.5)

    f = spmd.shard_map(body, mesh=mesh, in_specs=spmd.P("i"), out_specs=spmd.P("i"))
    result = (spmd.jit(f) if jit else f)(x)
    blocks = []
    for k, b in enumerate(x.reshape(4, 2, 3)):
        b = numpy_update(b, (k, slice(None)), "set", row)
        b = numpy_update(b, (slice(None), k - 1), "multiply", 10.0)
        blocks.append(numpy_update(b, (k % 2, k % 3), "add", 0.5))
    np.testing.assert_array_equal(result, np.concatenate(blocks))
    # device 0: row 0 set, column -1 scaled, (0, 0) added; device 3: row 3 dropped
    np.testing.assert_array_equal(result[0], [-0.5, -2.0, -30.0])
    np.testing.assert_array_equal(result[6:], [[18.0, 19.0, 200.0], [21.5, 22.0, 230.0]])


def test_shard_map_body_reads_with_traced_get(mesh):
    x = np.arange(16, dtype=np.float32)

    def body(block):
        return block.at[spmd.lax.axis_index("i")].get()[None]

    f = spmd.shard_map(body, mesh=mesh, in_specs=spmd.P("i"), out_specs=spmd.P("i"))
    np.testing.assert_array_equal(f(x), [0.0, 5.0, 10.0, 15.0])


def run_traced(index_of, x_shape, i):
    return spmd.jit(lambda x, i: x.at[index_of(i)].set(0.0))(np.zeros(x_shape, np.float32), i)


@pytest.mark.parametrize(
    "index_of, x_shape, i, error, match",
    [
        (lambda i: i, (4,), np.array([1, 2]), spmd.SpmdTypeError, r"entry 0 is a traced or spmd i"),
        (lambda i: i, (4,), np.float32(1), spmd.SpmdTypeError, r"entry 0 is a traced or spmd f32"),
        (lambda i: i, (4,), np.bool_(True), spmd.SpmdTypeError, r"entry 0 is a traced or spmd"),
        (lambda i: (i, slice(1, None)), (3, 4), 1, spmd.SpmdTypeError, r"entry 1 is slice\(1"),
        (lambda i: (Ellipsis, i), (3, 4), 1, spmd.SpmdTypeError, r"entry 0 is Ellipsis"),
        (lambda i: (None, i), (3, 4), 1, spmd.SpmdTypeError, r"entry 0 is None"),
        (lambda i: (i, np.array([0, 1])), (3, 4), 1, spmd.SpmdTypeError, r"entry 1 is array"),
        (lambda i: (i, 0), (4,), 1, spmd.SpmdIndexError, r"too many indices: x is f32\[4\]"),
        (lambda i: (i, 7), (3, 4), 1, spmd.SpmdIndexError, r"index 7 is out of bounds for axis 1"),
    ],
    ids=[
        "vector",
        "float",
        "bool",
        "partial-slice",
        "ellipsis",
        "none",
        "array",
        "too-many",
        "oob",
    ],
)
def test_unsupported_traced_indices_are_refused_clearly(index_of, x_shape, i, error, match):
    with pytest.raises(error, match=r"x\.at\[\.\.\.\]\.set: .*" + match):
        run_traced(index_of, x_shape, i)


def test_refusal_names_a_fix():
    with pytest.raises(spmd.SpmdTypeError, match=r"(?s)x: f32\[3,4\].*Fix: index with scalars"):
        run_traced(lambda i: (i, slice(0, 2)), (3, 4), 1)
