"""The case table's indexing rows: random and hand-picked x[index], and take."""

from __future__ import annotations

import numpy as np

from spmd import SpmdIndexError
from tests.cases.table import CASES, DTYPES, _label, add, call

# --------------------------------------------------------------------------- indexing

INDEX_SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (4, 1, 3)]
SLICE_STEPS = [None, 1, 2, 3, -1, -2]


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
            entry = slice(
                _bound(rng, size), _bound(rng, size), SLICE_STEPS[rng.integers(len(SLICE_STEPS))]
            )
        entries.append(entry)
        axis += 1
    if rng.random() < 0.2:
        entries.append(None)
    if len(entries) == 1 and rng.random() < 0.5:
        return entries[0]
    return tuple(entries)


def _is_array(entry) -> bool:
    return isinstance(entry, np.ndarray | list)


def _index_label(index) -> str:
    def one(e):
        if e is None:
            return "None"
        if e is Ellipsis:
            return "..."
        if isinstance(e, slice):
            parts = ["" if v is None else str(v) for v in (e.start, e.stop, e.step)]
            return ":".join(parts[:2] if e.step is None else parts)
        if _is_array(e):
            kind = (
                "mask" if np.asarray(e).dtype == bool else "list" if isinstance(e, list) else "arr"
            )
            return f"{kind}{'x'.join(map(str, np.shape(e))) or '()'}"
        return str(e)

    if isinstance(index, tuple):
        return "(" + ",".join(map(one, index)) + ("," if len(index) == 1 else "") + ")"
    return one(index)


def _getitem_rows(shape, index, *, dtypes=DTYPES, traced=True, error=None):
    """x[index] with its arrays as constants, and (``traced``) with them passed as inputs."""
    entries = list(index) if isinstance(index, tuple) else [index]
    label = _index_label(index)
    add(
        "_getitem",
        lambda m, x: x[index],
        (shape,),
        label=label,
        family="indexing",
        dtypes=dtypes,
        error=error,
    )
    positions = [i for i, e in enumerate(entries) if _is_array(e) and np.asarray(e).dtype != bool]
    if not (traced and positions):
        return

    def fn(m, x, *arrays):
        full = list(entries)
        for position, value in zip(positions, arrays, strict=True):
            full[position] = value
        return x[tuple(full) if isinstance(index, tuple) else full[0]]

    arrays = tuple(np.asarray(entries[p]).tolist() for p in positions)
    add(
        "_getitem",
        fn,
        (shape,),
        label="traced:" + label,
        family="indexing",
        dtypes=dtypes,
        indices=arrays,
        error=error,
    )


PLACEMENT = [  # NumPy's placement of advanced-index dimensions, on a (3, 4, 5) array
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
    (slice(1, None), slice(None, None, -2), slice(4, 0, -3)),
    (-1, slice(-2, None), 2),
]
_MASK_BASE = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
MASKS = [  # concrete boolean masks, on a (3, 4, 5) array
    _MASK_BASE > 20,
    (_MASK_BASE[:, 0, 0] > 10, slice(1, None)),
    (slice(None), _MASK_BASE[0, :, 0] % 2 == 0, [0, 2]),
    ([0, 2], slice(None), _MASK_BASE[0, 0] % 2 == 1),
    np.zeros((3, 4), bool),
]
TAKE = [  # (shape, indices, axis, mode)
    ((3, 4), [0, 2, -1], 1, None),
    ((3, 4), [[0, 2], [1, 1]], 0, "raise"),
    ((3, 4), 5, None, None),
    ((3, 4), [[0, 11], [-12, 3]], None, None),
    ((2, 3, 4), [1, 0], -2, None),
    ((3, 4), [9, -7, 2], 1, "wrap"),
    ((3, 4), [9, -7, 2], 1, "clip"),
    ((5,), [], 0, None),
    ((3, 0), [], 1, None),
    ((0, 3), [0, 2], 1, None),
    ((), [0, 0], None, None),
]
INDEX_ERRORS = [  # (shape, index): SpmdIndexError, eagerly and at trace time
    ((3,), 3),
    ((3, 4), (slice(None), -5)),
    ((3, 4), (Ellipsis, [0, 4])),
    ((0,), [0]),
    ((3, 4), (0, 0, 0)),
    ((), 0),
]


def _indexing():
    seen = set()
    for seed in range(12):  # random basic and advanced indices, each run on one dtype
        rng = np.random.default_rng(seed)
        for n in range(40):
            shape, before = INDEX_SHAPES[n % len(INDEX_SHAPES)], len(CASES)
            _getitem_rows(shape, random_index(rng, shape), dtypes=(DTYPES[(n + seed) % 5],))
            new, CASES[before:] = CASES[before:], []
            CASES.extend(case for case in new if case.id not in seen)  # indices repeat now and then
            seen.update(case.id for case in new)
    for index in PLACEMENT:
        _getitem_rows((3, 4, 5), index)
    for index in MASKS:
        _getitem_rows((3, 4, 5), index)
    _getitem_rows((3, 4), np.array(2))  # a 0-d index array: traced, it is an int under jit
    _getitem_rows((3, 4), (np.array(-1), slice(None, None, 2)))
    _getitem_rows((3, 4), (np.array([[0], [-1]]), slice(None, None, -1)))
    _getitem_rows((3, 4), (slice(None), np.array([1, 0, 1])))
    _getitem_rows((0, 4), (slice(None), np.array([[3, -4]])))
    for shape, index in INDEX_ERRORS:
        _getitem_rows(shape, index, traced=False, error=SpmdIndexError)
    ix = {"family": "indexing"}
    for shape, indices, axis, mode in TAKE:
        kwargs = {"axis": axis} if mode is None else {"axis": axis, "mode": mode}
        label = _label(indices, **kwargs)
        add(
            "take",
            lambda m, x, i, kw=kwargs: m.take(x, i, **kw),
            (shape,),
            label=label,
            indices=(indices,),
            **ix,
        )
        add(
            "take",
            lambda m, x, i=indices, kw=kwargs: m.take(x, i, **kw),
            (shape,),
            label="const:" + label,
            **ix,
        )
    add(
        "take",
        lambda m, x: m.take(x, np.array([True, False]), axis=0),
        ((5,),),
        label="bools",
        **ix,
    )
    add(
        "take",
        call("take", [0, 4], axis=1),
        ((3, 4),),
        label="[0,4],axis=1",
        error=SpmdIndexError,
        **ix,
    )
    add(
        "take", call("take", [0], axis=2), ((3, 4),), label="[0],axis=2", error=SpmdIndexError, **ix
    )
