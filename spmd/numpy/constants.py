"""NumPy's dtype names, dtype helpers and constants as spmd.numpy spells them, as JAX's does:
``snp.float32``, ``snp.issubdtype(x.dtype, snp.floating)``, ``snp.nan``, ``snp.newaxis``."""

from __future__ import annotations

import numpy as np

from spmd.core.dtypes import canonical_dtype
from spmd.core.methods import ArrayMethods
from spmd.numpy.namespace_info import __array_namespace_info__

ndarray = ArrayMethods  # what spmd Arrays and traced values both are: isinstance, annotations

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
complexfloating = np.complexfloating
dtype = np.dtype
bool = np.bool_  # the Array API's name for the boolean dtype
isdtype = np.isdtype
__array_api_version__ = "2023.12"


def _dtype_of(value: object) -> object:
    """The dtype of an array, or the dtype (or type) itself."""
    return value if isinstance(value, type | np.dtype | str) else getattr(value, "dtype", value)


class finfo:
    """``numpy.finfo`` whose fields are Python numbers, as the Array API asks (bits, eps,
    max, min, smallest_normal, dtype; NumPy's others pass through)."""

    def __init__(self, type_: object) -> None:
        info = np.finfo(_dtype_of(type_))
        self._info, self.dtype, self.bits = info, info.dtype, int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.tiny, self.resolution = float(info.tiny), float(info.resolution)

    def __getattr__(self, name: str) -> object:
        return getattr(self._info, name)

    def __repr__(self) -> str:
        return repr(self._info)


class iinfo:
    """``numpy.iinfo`` whose fields are Python ints (bits, max, min, dtype)."""

    def __init__(self, type_: object) -> None:
        info = np.iinfo(_dtype_of(type_))
        self._info, self.dtype, self.kind = info, info.dtype, info.kind
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)

    def __repr__(self) -> str:
        return repr(self._info)


issubdtype, promote_types = np.issubdtype, np.promote_types


_NUMPY_TAKES = (np.ndarray, np.generic, np.dtype, type, str, bool, int, float, complex)


def _numpy_operand(x):
    """``x`` as NumPy's dtype functions take it: an spmd array (or traced value) by its dtype
    (given to NumPy, ``np.result_type`` would hand it back to spmd: endless dispatch)."""
    if isinstance(x, _NUMPY_TAKES):
        return x
    dtype = getattr(x, "dtype", None)
    return x if dtype is None else np.dtype(dtype)


def result_type(*arrays_and_dtypes):
    """NumPy's ``result_type``, taking spmd arrays too (with x64 off, the 32-bit type)."""
    return canonical_dtype(np.result_type(*(_numpy_operand(x) for x in arrays_and_dtypes)))


def can_cast(from_, to, casting="safe"):
    """NumPy's ``can_cast``, taking spmd arrays too."""
    return np.can_cast(_numpy_operand(from_), to, casting=casting)


nan, inf, pi, e, euler_gamma = np.nan, np.inf, np.pi, np.e, np.euler_gamma
newaxis = None

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "bool",
    "bool_",
    "can_cast",
    "complex64",
    "complex128",
    "complexfloating",
    "dtype",
    "e",
    "euler_gamma",
    "finfo",
    "float16",
    "float32",
    "float64",
    "floating",
    "generic",
    "iinfo",
    "inexact",
    "inf",
    "int8",
    "int16",
    "int32",
    "int64",
    "integer",
    "isdtype",
    "issubdtype",
    "nan",
    "ndarray",
    "newaxis",
    "number",
    "pi",
    "promote_types",
    "result_type",
    "signedinteger",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "unsignedinteger",
]
