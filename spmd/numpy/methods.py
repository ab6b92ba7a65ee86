"""The operators and array methods of spmd Arrays and traced values (``x + y``, ``x[i]``,
``x.sum()``, ``x.T``), written over spmd.numpy.

spmd.core defines the class they share (``spmd.core.methods.ArrayMethods``) but never imports
spmd.numpy, which lies above it; ``spmd/__init__.py`` calls ``install`` to put these methods
on that class, as it installs the eager evaluator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.methods import ArrayMethods
from spmd.errors import SpmdValueError
from spmd.numpy.elementwise import _power_operator
from spmd.numpy.indexing import _getitem
from spmd.numpy.updates import IndexUpdates

_API_VERSIONS = ("2021.12", "2022.12", "2023.12")  # the standard's versions spmd.numpy meets


def _binary(name: str, reflected: bool = False):
    fn = getattr(snp, name)

    def method(self, other):
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = name
    return method


def _unary(name: str):
    fn = getattr(snp, name)

    def method(self):
        return fn(self)

    method.__name__ = name
    return method


class NumpyMethods:
    """Arithmetic, comparison and array methods; each forwards to the spmd.numpy function.
    Not a base class: ``install`` copies them onto ``ArrayMethods``."""

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __rpow__ = _binary("power", True)

    def __getitem__(self, index: Any):
        return _getitem(self, index)

    def __array_namespace__(self, *, api_version: str | None = None):
        """spmd.numpy, the namespace of functions on these arrays (the standard's protocol)."""
        if api_version not in (None, *_API_VERSIONS):
            raise SpmdValueError(
                f"__array_namespace__: api_version={api_version!r} is not one spmd.numpy "
                f"implements; pass one of {', '.join(_API_VERSIONS)}, or None for "
                f"{snp.__array_api_version__}."
            )
        return snp

    def __pow__(self, other):  # ``x ** 2`` is NumPy's square: bools give int8, not int64
        return _power_operator(self, other)

    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")  # type: ignore[assignment]
    __neg__, __pos__ = _unary("negative"), _unary("positive")
    __abs__, __invert__ = _unary("abs"), _unary("invert")

    @property
    def T(self):
        return snp.transpose(self)

    @property
    def mT(self):
        """The matrix transpose: the last two axes swapped."""
        return snp.swapaxes(self, -1, -2)

    @property
    def at(self):
        """``x.at[index].set(v)`` (and add, multiply, min, max, get): x with the indexed
        elements updated, as a new array, as in JAX."""
        return IndexUpdates(self)

    def copy(self):
        return snp.copy(self)

    def clip(self, min=None, max=None):
        return snp.clip(self, min=min, max=max)

    def round(self, decimals: int = 0):
        return snp.round(self, decimals)

    def repeat(self, repeats, axis=None):
        return snp.repeat(self, repeats, axis=axis)

    def swapaxes(self, axis1: int, axis2: int):
        return snp.swapaxes(self, axis1, axis2)

    def take(self, indices, axis=None):
        return snp.take(self, indices, axis=axis)

    def dot(self, other):
        return snp.dot(self, other)

    def reshape(self, *shape, order: str = "C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return snp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return snp.transpose(self, axes or None)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """``ndarray.astype``; ``order``, ``subok`` and ``copy`` change nothing here (spmd
        arrays are immutable, and laid out as the sharding says); ``casting`` is checked."""
        if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting):
            from spmd.errors import SpmdTypeError

            raise SpmdTypeError(
                f"astype: cannot cast {self.dtype} to {np.dtype(dtype)} with casting="
                f"{casting!r}; pass casting='unsafe' (the default) to convert anyway."
            )
        return snp.astype(self, dtype)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return snp.sum(self, axis, dtype, out, keepdims, initial, where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
        return snp.mean(self, axis, dtype, out, keepdims, where=where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return snp.prod(self, axis, dtype, out, keepdims, initial, where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return snp.max(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return snp.min(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return snp.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return snp.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False, *, where=None):
        return snp.all(self, axis, out, keepdims, where=where)

    def any(self, axis=None, out=None, keepdims=False, *, where=None):
        return snp.any(self, axis, out, keepdims, where=where)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        """``ndarray.std``; ``options``: where, mean, correction."""
        return snp.std(self, axis, dtype, out, ddof, keepdims, **options)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **options):
        """``ndarray.var``; ``options``: where, mean, correction."""
        return snp.var(self, axis, dtype, out, ddof, keepdims, **options)

    def cumsum(self, axis=None, dtype=None):
        return snp.cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis=None, dtype=None):
        return snp.cumprod(self, axis=axis, dtype=dtype)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """A sorted copy, as in JAX (NumPy's ``ndarray.sort`` sorts in place)."""
        return snp.sort(self, axis=axis, kind=kind, order=order, stable=stable)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return snp.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return snp.diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None):
        return snp.trace(self, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype)

    @property
    def real(self):
        return snp.real(self)

    @property
    def imag(self):
        return snp.imag(self)

    def conj(self):
        """NumPy's ``ndarray.conj``: the conjugate of a complex array, any other array
        itself (so a bool array stays bool, where ``numpy.conjugate`` gives int8)."""
        return snp.conjugate(self) if self.dtype.kind == "c" else self

    conjugate = conj

    def squeeze(self, axis=None):
        return snp.squeeze(self, axis=axis)

    def flatten(self):
        return snp.reshape(self, (-1,))

    def ravel(self):
        return snp.reshape(self, (-1,))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = getattr(snp, ufunc.__name__, None)
        if method != "__call__" or fn is None or kwargs:
            suffix = "" if method == "__call__" else f".{method}"
            name = f"numpy.{ufunc.__name__}{suffix}"
            return self._unsupported(name, getattr(ufunc, method), inputs, kwargs)
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        fn = getattr(snp, func.__name__, None)
        if not callable(fn):  # missing, or a submodule's name (spmd.numpy.shape)
            return self._unsupported(f"numpy.{func.__name__}", func, args, kwargs)
        return fn(*args, **kwargs)


_NOT_METHODS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"})


def install(target: type = ArrayMethods) -> None:
    """Put the methods on ``target`` (core's ArrayMethods, which Arrays and tracers share)."""
    for name, value in vars(NumpyMethods).items():
        if name not in _NOT_METHODS:
            setattr(target, name, value)
