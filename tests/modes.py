"""Running a NumPy-style call three ways, for the issue-22 fix tests: eagerly on NumPy inputs,
under ``spmd.jit``, and on inputs split over an 8-device mesh."""

from __future__ import annotations

import warnings

import numpy as np

import spmd
from spmd import NamedSharding, P

MODES = ("eager", "jit", "sharded")


def put(x, spec=None):
    """``x`` split over an 8-device mesh along its first axis (replicated if 0-d)."""
    x = np.asarray(x)
    mesh = spmd.make_mesh((8,), ("x",))
    return spmd.device_put(x, NamedSharding(mesh, spec or (P("x") if x.ndim else P())))


def run(mode, fn, *arrays):
    """``fn(*arrays)`` eagerly on NumPy inputs, under jit, or on inputs split over 8 devices."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if mode == "jit":
            return spmd.jit(fn)(*arrays)
        if mode == "sharded":
            return fn(*map(put, arrays))
        return fn(*arrays)
