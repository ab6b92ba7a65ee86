"""x[index] and take against NumPy: random basic and integer-array indices, eager and jit."""

import numpy as np
import pytest

import spmd
import spmd.numpy as snp
from spmd.prims.indexing import SpmdIndexError
from tests.cases import DTYPES, make_input

SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (4, 1, 3)]
STEPS = [None, 1, 2, 3, -1, -2]


def _bound(rng, size):
    return None if rng.random() < 0.3 else int(rng.integers(-size - 2, size + 3))


def _index_array(rng, size, common):
    """Values in [-size, size) of a shape that broadcasts to ``common``."""
    shape = [
        1 if rng.random() < 0.3 else d for d in common[int(rng.integers(0, len(common) + 1)) :]
    ]
    if size == 0 and np.prod(shape) > 0:
        return None
    values = rng.integers(-size, max(size, 1), size=shape)
    return values.tolist() if rng.random() < 0.25 and values.size else values


def random_index(rng, shape):
    """A random NumPy index for ``shape``: ints, slices, None, Ellipsis and index arrays."""
    common = tuple(int(d) for d in rng.integers(0, 3, size=rng.integers(0, 3)))
    use_arrays, entries, axis, ellipsis = rng.random() < 0.7, [], 0, False
    while axis < len(shape) and (ellipsis or rng.random() < 0.9):
        kind, size = rng.choice(["int", "slice", "none", "ellipsis", "array", "array"]), shape[axis]
        if kind == "none":
            entries.append(None)
            continue
        if kind == "ellipsis" and not ellipsis:
            ellipsis = True
            entries.append(Ellipsis)
            axis += int(rng.integers(0, len(shape) - axis + 1))
            continue
        entry = None
        if kind == "int" and size:
            entry = int(rng.integers(-size, size))
        elif kind == "array" and use_arrays:
            entry = _index_array(rng, size, common)
        if entry is None:
            entry = slice(_bound(rng, size), _bound(rng, size), STEPS[rng.integers(len(STEPS))])
        entries.append(entry)
        axis += 1
    if rng.random() < 0.2:
        entries.append(None)
    if len(entries) == 1 and rng.random() < 0.5:
        return entries[0]
    return tuple(entries)


def _split_arrays(index):
    """The index with its arrays taken out (to pass them to jit as traced arguments)."""
    entries = list(index) if isinstance(index, tuple) else [index]
    arrays = [np.asarray(e, np.intp) for e in entries if isinstance(e, (np.ndarray, list))]
    positions = [i for i, e in enumerate(entries) if isinstance(e, (np.ndarray, list))]

    def rebuild(traced):
        full = list(entries)
        for position, value in zip(positions, traced, strict=True):
            full[position] = value
        return tuple(full) if isinstance(index, tuple) else full[0]

    return arrays, rebuild


def check(result, expected):
    expected = np.asarray(expected)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(result), expected)


@pytest.mark.parametrize("seed", range(12))
def test_random_indices_match_numpy_eagerly_and_under_jit(seed):
    rng = np.random.default_rng(seed)
    advanced = 0
    for n in range(40):
        shape, dtype = SHAPES[n % len(SHAPES)], DTYPES[(n + seed) % len(DTYPES)]
        x, index = make_input(shape, dtype, n), random_index(rng, SHAPES[n % len(SHAPES)])
        expected = x[index]
        check(spmd.device_put(x)[index], expected)
        check(snp._getitem(x, index), expected)
        arrays, rebuild = _split_arrays(index)
        advanced += bool(arrays)
        check(spmd.jit(lambda a, *arrs, rebuild=rebuild: a[rebuild(arrs)])(x, *arrays), expected)
        check(spmd.jit(lambda a, index=index: a[index])(x), expected)  # arrays as constants
    assert advanced > 5  # the generator did produce integer-array indices


@pytest.mark.parametrize(
    "index",
    [
        (0, slice(None), [1, 2]),  # separated advanced indices move to the front
        ([0, 1], None, [1, 2]),  # None separates them too
        (slice(None), 0, [1, 2]),  # adjacent: stay in place
        (Ellipsis, [[0], [1]], [0, 2]),
        ([[0, 1]], slice(1, None), np.array([[1], [0]])),
        (np.array(1), slice(None), np.array(2)),
        (slice(None, None, -1), Ellipsis, -1),
        (Ellipsis, None),
        (slice(None), [0], Ellipsis, [1]),  # an empty ellipsis still separates them
        ([0], [1], Ellipsis),
        (),
    ],
    ids=str,
)
def test_numpy_placement_of_advanced_dimensions(index):
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    check(spmd.device_put(x)[index], x[index])
    arrays, rebuild = _split_arrays(index)
    check(spmd.jit(lambda a, *arrs: a[rebuild(arrs)])(x, *arrays), x[index])


@pytest.mark.parametrize(
    "make_index",
    [
        lambda x: x > 20,
        lambda x: (x[:, 0, 0] > 10, slice(1, None)),
        lambda x: (slice(None), x[0, :, 0] % 2 == 0, [0, 2]),
        lambda x: ([0, 2], slice(None), x[0, 0] % 2 == 1),
        lambda x: np.zeros((3, 4), bool),
    ],
)
def test_concrete_boolean_masks_match_numpy(make_index):
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    index = make_index(x)
    check(spmd.device_put(x)[index], x[index])
    check(spmd.jit(lambda a: a[index])(x), x[index])


def test_traced_integer_index_arrays_and_scalars():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    check(spmd.jit(lambda a, i: a[i])(x, 2), x[2])
    check(spmd.jit(lambda a, i: a[i, ::-1])(x, np.array([[0], [-1]])), x[[[0], [-1]], ::-1])
    index = spmd.device_put(np.array([1, 0, 1]))
    check(spmd.device_put(x)[:, index], x[:, [1, 0, 1]])


def test_traced_out_of_range_indices_are_clipped_under_jit_as_in_jax():
    x = np.arange(5.0)
    result = spmd.jit(lambda a, i: a[i])(x, np.array([7, -9, -1, 2]))
    check(result, np.array([4.0, 0.0, 4.0, 2.0]))


@pytest.mark.parametrize(
    ("shape", "index", "pattern"),
    [
        ((3,), 3, "index 3 is out of bounds for axis 0 with size 3"),
        ((3, 4), (slice(None), -5), "index -5 is out of bounds for axis 1 with size 4"),
        ((3, 4), (Ellipsis, [0, 4]), "index 4 is out of bounds for axis 1 with size 4"),
        ((0,), [0], "index 0 is out of bounds for axis 0 with size 0"),
        ((3, 4), (0, 0, 0), r"too many indices: the array has shape \(3, 4\)"),
        ((3, 4), (Ellipsis, 0, Ellipsis), "single ellipsis"),
        ((3,), np.array([True, False]), "along axis 0: the axis has size 3 but the mask has"),
    ],
)
def test_index_errors_name_axis_index_and_size(shape, index, pattern):
    x = np.zeros(shape, np.float32)
    for fn in (lambda a: a[index], spmd.jit(lambda a: a[index])):
        with pytest.raises(SpmdIndexError, match=pattern) as info:
            fn(spmd.device_put(x))
        assert isinstance(info.value, IndexError) and isinstance(info.value, spmd.SpmdError)


def test_unsupported_indices_raise_type_errors_that_say_what_to_do():
    x = spmd.device_put(np.arange(6.0))
    with pytest.raises(spmd.SpmdTypeError, match=r"traced boolean mask bool\[6\].*where"):
        spmd.jit(lambda a: a[a > 2])(x)
    with pytest.raises(spmd.SpmdTypeError, match=r"got float 1\.5"):
        x[1.5]
    with pytest.raises(spmd.SpmdTypeError, match="got an array of float64"):
        x[np.array([1.0])]
    with pytest.raises(spmd.SpmdTypeError, match="slice starts must be static integers"):
        spmd.jit(lambda a, i: a[i:])(x, 2)
    with pytest.raises(spmd.ShapeError, match=r"could not be broadcast.*\(2,\), \(3,\)"):
        spmd.device_put(np.ones((3, 3)))[[0, 1], [0, 1, 2]]
    with pytest.raises(spmd.ShapeError, match="step 0"):
        x[::0]


@pytest.mark.parametrize(
    ("shape", "indices", "axis", "mode"),
    [
        ((3, 4), [0, 2, -1], 1, None),
        ((3, 4), [[0, 2], [1, 1]], 0, "raise"),
        ((3, 4), 5, None, None),
        ((3, 4), [[0, 11], [-12, 3]], None, None),
        ((2, 3, 4), np.array([1, 0]), -2, None),
        ((3, 4), [9, -7, 2], 1, "wrap"),
        ((3, 4), [9, -7, 2], 1, "clip"),
        ((5,), [], 0, None),
        ((5,), np.array([True, False]), 0, None),
        ((3, 0), [], 1, None),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_take_matches_numpy(shape, indices, axis, mode, dtype):
    x = make_input(shape, dtype, 3)
    expected = np.take(x, indices, axis=axis, mode=mode or "raise")
    check(snp.take(spmd.device_put(x), indices, axis=axis, mode=mode), expected)
    traced = np.asarray(indices, dtype=np.intp if not np.size(indices) else None)
    if traced.dtype.kind in "iu":
        jitted = spmd.jit(lambda a, i: snp.take(a, i, axis=axis, mode=mode))
        check(jitted(x, traced), expected)


def test_take_errors():
    x = spmd.device_put(np.arange(12).reshape(3, 4))
    with pytest.raises(SpmdIndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        snp.take(x, [0, 4], axis=1)
    with pytest.raises(SpmdIndexError, match="axis 2 is out of bounds for an array of 2"):
        snp.take(x, [0], axis=2)
    with pytest.raises(spmd.SpmdTypeError, match="mode='fill'"):
        snp.take(x, [0], mode="fill")
    clipped = spmd.jit(lambda a, i: snp.take(a, i, axis=0))(x, np.array([5, -1]))
    check(clipped, np.asarray(x)[[2, 2]])
