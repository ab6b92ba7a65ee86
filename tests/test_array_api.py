"""What JAX code uses of an array: the attributes an Array and a traced value share with
np.ndarray, ``.at`` updates, whole-array comparisons, and spmd.numpy's dtype names."""

import itertools

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.core.trace import Tracer

# np.ndarray attributes that spmd Arrays lack on purpose, and why
IMMUTABLE = {"fill", "put", "resize", "setfield", "setflags", "byteswap", "partition"}
BUFFERS = {"base", "ctypes", "data", "flags", "strides", "view", "getfield", "dump", "dumps",
           "tobytes", "tofile", "flat"}  # fmt: skip
# Not written yet; nonzero and compress have data-dependent shapes, which jit cannot trace
DATA_DEPENDENT_OR_NOT_YET = {"argpartition", "choose", "compress", "nonzero", "searchsorted"}
# Deprecated in NumPy 2.0 and gone from later releases: not part of what JAX code uses.
REMOVED_AFTER_NUMPY_2_0 = {"itemset", "newbyteorder", "ptp", "tostring"}
CONCRETE_ONLY = {"addressable_shards", "block_until_ready", "device", "devices",
                 "global_shards", "is_fully_addressable", "is_fully_replicated", "sharding",
                 "to_device"}  # fmt: skip


def public(cls) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_arrays_and_traced_values_have_what_ndarray_has_but_the_listed_gaps():
    assert (
        public(np.ndarray) - REMOVED_AFTER_NUMPY_2_0 - public(spmd.Array)
        == IMMUTABLE | BUFFERS | DATA_DEPENDENT_OR_NOT_YET
    )
    assert public(spmd.Array) - public(Tracer) == CONCRETE_ONLY
    assert public(Tracer) - public(spmd.Array) == {"aval"}


def test_metadata_and_methods_agree_eagerly_under_jit_and_with_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    mesh = spmd.make_mesh((2, 4), ("a", "b"))
    a = spmd.device_put(x, spmd.NamedSharding(mesh, spmd.P("a", None, "b")))
    for name in ("ndim", "size", "itemsize", "nbytes", "shape", "dtype"):
        assert getattr(a, name) == getattr(x, name), name
    seen = {}

    def probe(v):
        seen.update(ndim=v.ndim, size=v.size, itemsize=v.itemsize, nbytes=v.nbytes)
        assert isinstance(v, snp.ndarray)
        return v.mT, v.swapaxes(0, 2), v.clip(3, 9), v.round(), v.take([0, 2], axis=2), v.copy()

    expected = (np.swapaxes(x, -1, -2), x.swapaxes(0, 2), x.clip(3, 9), x.round(),
                x.take([0, 2], axis=2), x)  # fmt: skip
    for got, want in zip(spmd.jit(probe)(a), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert seen == {"ndim": 3, "size": 24, "itemsize": 8, "nbytes": 192}
    assert a.item(5) == 5.0 and a.tolist() == x.tolist() and a.max(initial=99.0) == 99.0
    with pytest.raises(spmd.TracerBoolConversionError):
        spmd.jit(lambda v: v.item(0))(a)


def index_cases():
    rng = np.random.default_rng(14)
    yield 1, (3, 4)
    yield (slice(None), slice(1, 3)), (3, 4)
    yield (slice(None, None, -2), 0), (5, 2)
    yield ([0, 0, 2], [1, 1, 3]), (3, 4)  # a repeated position
    yield (np.array([[1, 0], [1, 1]]),), (3, 2)
    yield (Ellipsis, None, 1), (2, 3)
    yield np.array([True, False, True]), (3, 2)
    for _ in range(6):
        shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(1, 4)))
        index = tuple(rng.integers(0, n, size=rng.integers(1, 5)) for n in shape[:1])
        yield index, shape


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max", "get"])
def test_at_updates_equal_numpy_ufunc_at_eagerly_and_under_jit(op):
    numpy_op = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}
    for index, shape in index_cases():
        x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 3
        target = x[index]
        values = np.linspace(-2, 2, target.size).reshape(target.shape)
        if op == "get":
            expected = target
        elif op == "set":
            expected = x.copy()
            expected[index] = values
        else:
            expected = x.copy()
            numpy_op[op].at(expected, index, values)

        def update(v, u, index=index):
            chosen = v.at[index]
            return chosen.get() if op == "get" else getattr(chosen, op)(u)

        eager = update(spmd.device_put(x), values)
        jitted = spmd.jit(update)(x, values)
        np.testing.assert_array_equal(eager, expected, err_msg=f"{op} {index}")
        np.testing.assert_array_equal(jitted, expected, err_msg=f"{op} {index} jit")


def test_at_keeps_the_dtype_and_rejects_bad_indices():
    x = spmd.device_put(np.zeros(4, np.int32))
    assert x.at[1].add(2.7).dtype == np.int32
    with pytest.raises(IndexError):  # an SpmdIndexError is also Python's IndexError
        x.at[7].set(1)
    with pytest.raises(spmd.SpmdIndexError, match=r"x.at\[...\].set: index 7 is out of bounds"):
        x.at[7].set(1)
    np.testing.assert_array_equal(
        spmd.jit(lambda v, i: v.at[i].set(0))(np.ones(4), 2), [1.0, 1.0, 0.0, 1.0]
    )
    with pytest.raises(spmd.SpmdTypeError, match="index entry 0"):
        spmd.jit(lambda v, i: v.at[i].set(0))(np.zeros(4), np.array([1, 2]))


SPECIAL = np.array([0.0, -0.0, 1.0, 1 + 1e-9, np.nan, np.inf, -np.inf, 1e300])


@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose_and_array_equal_match_numpy(equal_nan):
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    np.testing.assert_array_equal(
        snp.isclose(a, b, equal_nan=equal_nan), np.isclose(a, b, equal_nan=equal_nan)
    )
    for x, y in [(a, b), (a, a), (np.arange(4), np.arange(4.0)), (np.ones(3), np.ones(4))]:
        if x.shape == y.shape:
            assert bool(snp.allclose(x, y, equal_nan=equal_nan)) == np.allclose(
                x, y, equal_nan=equal_nan
            )
        assert bool(snp.array_equal(x, y, equal_nan=equal_nan)) == np.array_equal(
            x, y, equal_nan=equal_nan
        )
    assert bool(snp.array_equiv(np.ones((2, 3)), np.ones(3))) and not snp.array_equiv(
        np.ones(2), np.ones(3)
    )


def test_dtype_names_and_constants_are_numpys():
    assert snp.float32 is np.float32 and snp.int32 is np.int32 and snp.bool_ is np.bool_
    assert np.isnan(snp.nan) and snp.inf == np.inf and snp.pi == np.pi and snp.newaxis is None
    assert snp.issubdtype(snp.zeros(2).dtype, snp.floating)
    assert snp.zeros(3, dtype=snp.float32).dtype == np.float32
    x = spmd.device_put(np.ones(3))
    assert snp.copy(x) is x and isinstance(snp.copy([1, 2]), spmd.Array)


def test_array_of_traced_and_sharded_elements_stacks_them():
    x = np.arange(4.0)
    f = spmd.jit(lambda v: snp.array([v.sum(), v.max(), 3.0]))
    np.testing.assert_array_equal(f(x), [6.0, 3.0, 3.0])
    g = spmd.jit(lambda v: snp.asarray([[v[0], v[1]], [v[2], v[3]]], dtype=np.float32))
    assert g(x).dtype == np.float32
    np.testing.assert_array_equal(g(x), x.reshape(2, 2))
    mixed = snp.array([spmd.device_put(np.ones(2)), [0, 0]])
    np.testing.assert_array_equal(mixed, [[1, 1], [0, 0]])


def test_device_and_to_device():
    one = spmd.device_put(np.arange(3.0), spmd.devices()[2])
    assert one.device == spmd.devices()[2]
    mesh = spmd.make_mesh((4,), ("x",))
    sharding = spmd.NamedSharding(mesh, spmd.P("x"))
    moved = one.to_device(sharding)
    assert moved.device == sharding
    np.testing.assert_array_equal(np.asarray(moved), np.arange(3.0))
    with pytest.raises(spmd.SpmdValueError, match="no streams"):
        one.to_device(spmd.devices()[0], stream=1)
