"""Array creation beyond the case table (tests/cases/): dtypes spmd does not hold, and
creation inside jit, which makes each device's block on that device."""

import warnings

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd import NamedSharding, P


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(spmd.SpmdTypeError, match=r"dtype=<U0 is not supported; spmd holds bool"):
        snp.zeros(3, dtype=str)


def test_bool_arange_of_more_than_two_values_is_a_clear_error():
    assert snp.arange(2, dtype=bool).tolist() == [False, True]
    with pytest.raises(spmd.SpmdTypeError, match=r"arange\(0, 3, 1, dtype=bool\): .* has 3\. "):
        snp.arange(3, dtype=bool)
    with pytest.raises(spmd.SpmdTypeError, match=r"arange\(0, 'a', 1\): .* must be"):
        snp.arange("a")


def test_full_with_an_array_or_traced_fill_broadcasts_it():
    import numpy as np

    row = np.arange(3, dtype=np.int32)
    for fill in (row, np.float32(1.5)):
        expected = np.full((2, 3), fill)
        for result in (
            snp.full((2, 3), spmd.device_put(fill)),
            spmd.jit(lambda f: snp.full((2, 3), f))(fill),
            spmd.jit(lambda f: snp.full_like(np.ones((2, 3), np.int8), f))(fill),
        ):
            want = expected if result.dtype == expected.dtype else expected.astype(np.int8)
            assert result.dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(result), want)
    assert spmd.jit(lambda f: snp.full(2, f, dtype=np.float64))(row[:1]).dtype == np.float64
    assert spmd.jit(lambda f: snp.full(2, f))(2).dtype == np.full(2, 2).dtype  # made strong
    with pytest.raises(spmd.ShapeError, match=r"full: fill_value i32\[3\] does not fit shape"):
        spmd.jit(lambda f: snp.full((2, 4), f))(row)


# ---------------------------------------------------- creation inside jit, split on devices

MESHES = [((8,), ("x",)), ((2, 4), ("x", "y"))]


def _traced_creations(rng):
    """(label, function of no arguments, its NumPy value) for seeded random sizes."""
    n = int(rng.integers(0, 40))
    start, step = int(rng.integers(-50, 50)), int(rng.choice([-7, -3, -1, 1, 2, 5]))
    stop = start + step * n + int(rng.integers(-2, 3))
    shape = (int(rng.integers(1, 12)), int(rng.integers(1, 12)))
    dtype = rng.choice([np.int8, np.int32, np.int64, np.uint16, np.float32])
    fill = int(rng.integers(0, 100))
    diagonal = int(rng.integers(-3, 4))
    cases = [
        ("zeros", lambda: snp.zeros(shape, dtype), np.zeros(shape, dtype)),
        ("ones", lambda: snp.ones(shape, dtype), np.ones(shape, dtype)),
        ("full", lambda: snp.full(shape, fill, dtype), np.full(shape, fill, dtype)),
        ("full, weak fill", lambda: snp.full(shape, 2.5), np.full(shape, 2.5)),
        ("arange", lambda: snp.arange(start, stop, step), np.arange(start, stop, step)),
        ("arange(n)", lambda: snp.arange(n), np.arange(n)),
        ("eye", lambda: snp.eye(*shape, diagonal, dtype), np.eye(*shape, diagonal, dtype)),
    ]
    if np.dtype(dtype).kind in "iu" and step > 0 and start >= 0:
        cases.append(
            ("arange, dtype", lambda: snp.arange(start, stop, step, dtype),
             np.arange(start, stop, step, dtype))
        )  # fmt: skip
    return cases


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize(("shape", "names"), MESHES)
def test_creation_inside_jit_equals_numpy_and_is_made_on_the_devices(seed, shape, names):
    rng = np.random.default_rng(seed)
    mesh = spmd.make_mesh(shape, names)
    for label, make, expected in _traced_creations(rng):
        entries = [a for a in names if rng.random() < 0.7]
        spec = P(*entries) if expected.ndim == 2 or len(entries) < 2 else P(tuple(entries))
        f = spmd.jit(lambda make=make: make() + 0, out_shardings=NamedSharding(mesh, spec))
        lowered = f.lower()
        assert lowered.program.consts == [], label  # nothing made while tracing
        result = f()
        assert result.dtype == (expected + 0).dtype, label
        np.testing.assert_array_equal(np.asarray(result), expected + 0, err_msg=label)
        assert result.sharding.spec == spec, label
        split_everywhere = {a for a in spec if a for a in (a if isinstance(a, tuple) else (a,))}
        if split_everywhere == set(names):  # each device made just its block
            on_host = [e.primitive.name for e in lowered.partitioned.host_equations]
            assert on_host == [] or (label == "eye" and "equal" not in on_host), label


def test_arange_that_does_not_fit_its_dtype_follows_numpy():
    for args in [(0, 300, 1, np.int8), (0.5, 4), (0, 3, 0.5)]:
        np.testing.assert_array_equal(
            np.asarray(spmd.jit(lambda a=args: snp.arange(*a))()), np.arange(*args)
        )


def test_negative_sizes_are_a_shape_error():
    for make in (snp.zeros, snp.ones, lambda s: snp.full(s, 3)):
        with pytest.raises(spmd.ShapeError, match=r"negative size"):
            make((2, -1))
        with pytest.raises(spmd.ShapeError, match=r"negative size"):
            spmd.jit(lambda make=make: make((2, -1)))()


# ------------------------------------------------- eager creation with out_sharding=

EAGER_FILLED = {  # name: (spmd call, NumPy call), each given shape, dtype, out_sharding
    "zeros": (lambda s, d, o: snp.zeros(s, d, out_sharding=o), lambda s, d: np.zeros(s, d)),
    "ones": (lambda s, d, o: snp.ones(s, d, out_sharding=o), lambda s, d: np.ones(s, d)),
    "empty": (lambda s, d, o: snp.empty(s, d, out_sharding=o), lambda s, d: np.zeros(s, d)),
    "full": (lambda s, d, o: snp.full(s, 7, d, out_sharding=o), lambda s, d: np.full(s, 7, d)),
    "full, row fill": (
        lambda s, d, o: snp.full(s, np.arange(s[-1]), d, out_sharding=o),
        lambda s, d: np.full(s, np.arange(s[-1]), d),
    ),
    "zeros_like": (
        lambda s, d, o: snp.zeros_like(np.ones(s, d), out_sharding=o),
        lambda s, d: np.zeros(s, d),
    ),
    "ones_like": (
        lambda s, d, o: snp.ones_like(np.ones(s, d), out_sharding=o),
        lambda s, d: np.ones(s, d),
    ),
    "full_like": (
        lambda s, d, o: snp.full_like(np.ones(s, d), 3, out_sharding=o),
        lambda s, d: np.full(s, 3, d),
    ),
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", list(EAGER_FILLED))
def test_eager_creation_with_out_sharding_equals_numpy_on_uneven_meshes(name, seed):
    rng = np.random.default_rng(seed)
    shape, names = MESHES[seed % len(MESHES)]
    mesh = spmd.make_mesh(shape, names)
    sizes = (int(rng.integers(0, 11)), int(rng.integers(1, 7)))  # uneven, empty blocks too
    dtype = rng.choice([np.int8, np.uint16, np.float32, np.float64, np.complex64])
    entries = [a if rng.random() < 0.7 else None for a in names[:2]]
    spec = P(*entries)
    make, reference = EAGER_FILLED[name]
    result = make(sizes, dtype, NamedSharding(mesh, spec))
    expected = reference(sizes, dtype)
    assert result.sharding.spec == spec and result.dtype == expected.dtype
    np.testing.assert_array_equal(np.asarray(result), expected)
    for shard in result.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), expected[shard.index])


def test_eager_creation_with_out_sharding_makes_only_the_blocks():
    """zeros(out_sharding=) never holds the whole array on the host beside its blocks."""
    import tracemalloc

    mesh = spmd.make_mesh((8,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    total = 8 * 2**20  # 8 MiB of float64, 1 MiB a device
    tracemalloc.start()
    try:
        result = snp.zeros((total // 8,), np.float64, out_sharding=sharding)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.sharding == sharding
    assert peak < 1.5 * total, f"peak {peak} bytes for an array of {total}"


def test_eager_creation_with_out_sharding_refuses_as_numpy_and_names_the_call():
    mesh = spmd.make_mesh((8,), ("x",))
    with pytest.raises(spmd.ShardingError, match=r"spmd\.numpy\.zeros\(out_sharding=\.\.\.\)"):
        snp.zeros((3,), out_sharding=NamedSharding(mesh, P("x", None)))
    try:  # NumPy 2.0 still wraps a Python int out of range (with a warning); later ones refuse
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = np.full((3,), 300, np.int8)
    except OverflowError:
        with pytest.raises(spmd.SpmdOverflowError, match=r"fill_value=300 cannot become int8"):
            snp.full((3,), 300, np.int8, out_sharding=NamedSharding(mesh, P("x")))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            got = snp.full((3,), 300, np.int8, out_sharding=NamedSharding(mesh, P("x")))
        assert got.tolist() == expected.tolist()
    with pytest.raises(spmd.SpmdValueError, match=r"fill_value='a' cannot become int32"):
        snp.full((3,), "a", np.int32)
    assert snp.full((2,), 300.7, np.int8).tolist() == np.full((2,), 300.7, np.int8).tolist()
