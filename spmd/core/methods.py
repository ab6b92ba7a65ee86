"""The class that concrete Arrays and tracers share, with what it knows of itself alone
(``ndim``, ``size``, ``nbytes``, ``item``, ``tolist``).

Its operators and array methods (``x + y``, ``x[i]``, ``x.sum()``, ``x.T``) are written over
spmd.numpy, a layer above core: ``spmd/__init__.py`` installs them on this class
(spmd/numpy/methods.py), so that core never imports spmd.numpy.
"""

from __future__ import annotations

import numpy as np


class ArrayMethods:
    """What Arrays and tracers share; spmd.numpy's methods are installed on it."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # arrays compare elementwise (__eq__)

    # ---- metadata, from ``shape`` and ``dtype`` ------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    # ---- concrete values (a tracer has none: its __array__ says so) ---------------------
    def item(self, *args):
        return np.asarray(self).item(*args)

    def tolist(self):
        return np.asarray(self).tolist()

    def _unsupported(self, name: str, func, args: tuple, kwargs: dict):
        """A NumPy function spmd.numpy lacks: concrete values fall back to NumPy itself."""
        from spmd.tree_util import tree_map

        def host(x):
            return np.asarray(x) if isinstance(x, ArrayMethods) else x

        return func(*tree_map(host, args), **tree_map(host, kwargs))
