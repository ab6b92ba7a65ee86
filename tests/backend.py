"""The backend the suite runs on (``SPMD_BACKEND``; NumPy by default) and the dtypes its array
namespace computes with. A row that needs another dtype must either compute NumPy's value or
raise the clear SpmdTypeError that names the backend; nothing else passes."""

from __future__ import annotations

import functools

import numpy as np

import spmd
from spmd.prims.namespace import dtypes_held


@functools.cache
def held() -> frozenset[np.dtype]:
    """The dtypes the devices' backend computes with (asked at first use: a multi-process
    worker imports this before it joins the processes and lists devices)."""
    return dtypes_held(spmd.devices()[0].library.xp)


def _dtypes(values) -> set[np.dtype]:
    found = set()
    for value in values:
        if isinstance(value, list | tuple):
            found |= _dtypes(value)
        elif isinstance(value, np.ndarray | np.generic):
            found.add(value.dtype)
    return found


def needs_missing_dtype(*values) -> bool:
    """Whether ``values`` (arrays, or lists and tuples of them) hold a dtype the backend lacks."""
    return not _dtypes(values) <= held()


def refused_by_backend(error: BaseException) -> bool:
    """Whether ``error`` is spmd's refusal of a dtype or operation the backend lacks."""
    return isinstance(error, spmd.SpmdTypeError) and "SPMD_BACKEND" in str(error)
