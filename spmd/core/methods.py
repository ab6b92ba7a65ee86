"""Operators and methods shared by concrete Arrays and tracers, written over spmd.numpy."""

from __future__ import annotations

from typing import Any

import numpy as np


def _snp():
    import spmd.numpy as snp

    return snp


def _binary(name: str, reflected: bool = False):
    def method(self, other):
        fn = getattr(_snp(), name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = name
    return method


def _unary(name: str):
    def method(self):
        return getattr(_snp(), name)(self)

    method.__name__ = name
    return method


class ArrayMethods:
    """Arithmetic, comparison and array methods; each forwards to the spmd.numpy function."""

    __slots__ = ()

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __rpow__ = _binary("power", True)

    def __pow__(self, other):  # ``x ** 2`` is NumPy's square: bools give int8, not int64
        return _snp().elementwise._power_operator(self, other)

    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")  # type: ignore[assignment]
    __neg__, __pos__ = _unary("negative"), _unary("positive")
    __abs__, __invert__ = _unary("abs"), _unary("invert")
    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, index: Any):
        return _snp()._getitem(self, index)

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

    @property
    def T(self):
        return _snp().transpose(self)

    @property
    def mT(self):
        """The matrix transpose: the last two axes swapped."""
        return _snp().swapaxes(self, -1, -2)

    @property
    def at(self):
        """``x.at[index].set(v)`` (and add, multiply, min, max, get): x with the indexed
        elements updated, as a new array, as in JAX."""
        return _snp().updates.IndexUpdates(self)

    def copy(self):
        return _snp().copy(self)

    def clip(self, min=None, max=None):
        return _snp().clip(self, min=min, max=max)

    def round(self, decimals: int = 0):
        return _snp().round(self, decimals)

    def repeat(self, repeats, axis=None):
        return _snp().repeat(self, repeats, axis=axis)

    def swapaxes(self, axis1: int, axis2: int):
        return _snp().swapaxes(self, axis1, axis2)

    def take(self, indices, axis=None):
        return _snp().take(self, indices, axis=axis)

    def dot(self, other):
        return _snp().dot(self, other)

    def reshape(self, *shape, order: str = "C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _snp().reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return _snp().transpose(self, axes or None)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """``ndarray.astype``; ``order``, ``subok`` and ``copy`` change nothing here (spmd
        arrays are immutable, and laid out as the sharding says); ``casting`` is checked."""
        if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
            from spmd.errors import SpmdTypeError

            raise SpmdTypeError(
                f"astype: cannot cast {self.dtype} to {np.dtype(dtype)} with casting="
                f"{casting!r}; pass casting='unsafe' (the default) to convert anyway."
            )
        return _snp().astype(self, dtype)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _snp().sum(self, axis, dtype, out, keepdims, initial, where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
        return _snp().mean(self, axis, dtype, out, keepdims, where=where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return _snp().prod(self, axis, dtype, out, keepdims, initial, where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _snp().max(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return _snp().min(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _snp().argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _snp().argmin(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False, *, where=None):
        return _snp().all(self, axis, out, keepdims, where=where)

    def any(self, axis=None, out=None, keepdims=False, *, where=None):
        return _snp().any(self, axis, out, keepdims, where=where)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        """``ndarray.std``; ``options``: where, mean, correction."""
        return _snp().std(self, axis, dtype, out, ddof, keepdims, **options)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        """``ndarray.var``; ``options``: where, mean, correction."""
        return _snp().var(self, axis, dtype, out, ddof, keepdims, **options)

    def cumsum(self, axis=None, dtype=None):
        return _snp().cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis=None, dtype=None):
        return _snp().cumprod(self, axis=axis, dtype=dtype)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """A sorted copy, as in JAX (NumPy's ``ndarray.sort`` sorts in place)."""
        return _snp().sort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return _snp().argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _snp().diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None):
        return _snp().trace(self, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype)

    @property
    def real(self):
        return _snp().real(self)

    @property
    def imag(self):
        return _snp().imag(self)

    def conj(self):
        """NumPy's ``ndarray.conj``: the conjugate of a complex array, any other array
        itself (so a bool array stays bool, where ``numpy.conjugate`` gives int8)."""
        return _snp().conjugate(self) if self.dtype.kind == "c" else self

    conjugate = conj

    def squeeze(self, axis=None):
        return _snp().squeeze(self, axis=axis)

    def flatten(self):
        return _snp().reshape(self, (-1,))

    def ravel(self):
        return _snp().reshape(self, (-1,))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = getattr(_snp(), ufunc.__name__, None)
        if method != "__call__" or fn is None or kwargs:
            suffix = "" if method == "__call__" else f".{method}"
            name = f"numpy.{ufunc.__name__}{suffix}"
            return self._unsupported(name, getattr(ufunc, method), inputs, kwargs)
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        fn = getattr(_snp(), func.__name__, None)
        if not callable(fn):  # missing, or a submodule's name (spmd.numpy.shape)
            return self._unsupported(f"numpy.{func.__name__}", func, args, kwargs)
        return fn(*args, **kwargs)

    def _unsupported(self, name: str, func, args: tuple, kwargs: dict):
        """A NumPy function spmd.numpy lacks: concrete values fall back to NumPy itself."""
        from spmd.tree_util import tree_map

        def host(x):
            return np.asarray(x) if isinstance(x, ArrayMethods) else x

        return func(*tree_map(host, args), **tree_map(host, kwargs))
