"""The case table's rows of the functions whose result's shape depends on the input's values:
the Array API's ``unique_values``, ``unique_counts``, ``unique_inverse`` and ``unique_all``, and
``nonzero``. Without a size they run eagerly only (``eager_only``: EAGER_ONLY in
tests/cases/table.py says why and what the oracles do with them); ``nonzero`` with JAX's
``size=``/``fill_value=`` runs under jit like any row.

NumPy's side is ``numpy.unique`` with ``equal_nan=False`` (each NaN distinct, as the standard
says) and every result asked for, so that the values come sorted on every NumPy version.
"""

from __future__ import annotations

import numpy as np

from spmd import SpmdValueError
from tests.cases.table import SHAPES, SPECIAL, _label, add, unary


def _refuses_0d_nonzero() -> bool:
    try:
        np.nonzero(np.ones(()))
    except ValueError:
        return True
    return False


_NUMPY_REFUSES_0D_NONZERO = _refuses_0d_nonzero()


def numpy_unique(x):
    """(values, indices, inverse_indices, counts), inverse_indices of x's shape."""
    x = np.asarray(x)
    values, indices, inverse, counts = np.unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    return values, indices, inverse.reshape(x.shape), counts


PARTS = {  # which of numpy_unique's results each function gives
    "unique_values": (0,),
    "unique_counts": (0, 3),
    "unique_inverse": (0, 2),
    "unique_all": (0, 1, 2, 3),
}


def unique(name: str):
    def fn(m, x):
        if m is not np:
            result = getattr(m, name)(x)
            return result if name == "unique_values" else tuple(result)
        found = numpy_unique(x)
        parts = tuple(found[i] for i in PARTS[name])
        return parts[0] if name == "unique_values" else parts

    return fn


def numpy_nonzero(x, size=None, fill_value=None):
    """numpy.nonzero with JAX's ``size=``: the first ``size`` indices, padded with
    ``fill_value`` (0 by default)."""
    found = np.nonzero(x)
    if size is None:
        return found
    fills = np.broadcast_to(0 if fill_value is None else fill_value, (len(found),))
    return tuple(
        np.concatenate([f[:size], np.full(max(0, size - len(f)), fill, np.intp)])
        for f, fill in zip(found, fills, strict=True)
    )


def nonzero(**kwargs):
    return lambda m, x: numpy_nonzero(x, **kwargs) if m is np else m.nonzero(x, **kwargs)


def _data_dependent():
    eager = {"family": "indexing", "eager_only": True}
    for name in PARTS:
        add(name, unique(name), *unary(SHAPES), **eager)
        add(name, unique(name), ((4, 5),), **SPECIAL, **eager)
    nonzero_shapes = unary(((5,), (2, 3), (0,), (2, 0, 3), (3, 4, 2)))
    add("nonzero", nonzero(), *nonzero_shapes, **eager)
    add("nonzero", nonzero(), ((4, 5),), **SPECIAL, **eager)
    for size, fill in ((4, None), (9, -1), (0, None), (3, (7, 8))):
        label = _label(size=size, fill_value=fill)
        shapes = nonzero_shapes if len(np.shape(fill)) != 1 else [((3, 4),), ((0, 2),)]
        add("nonzero", nonzero(size=size, fill_value=fill), *shapes, label=label,
            family="indexing")  # fmt: skip
    if _NUMPY_REFUSES_0D_NONZERO:  # NumPy 2.0 still reads a 0-d input as 1-d (deprecated)
        add("nonzero", nonzero(), ((),), label="0-d", error=SpmdValueError, family="indexing")
