"""NumPy's dtype names, dtype helpers and constants as spmd.numpy spells them, as JAX's does:
``snp.float32``, ``snp.issubdtype(x.dtype, snp.floating)``, ``snp.nan``, ``snp.newaxis``."""

from __future__ import annotations

import numpy as np

from spmd.core.methods import ArrayMethods

ndarray = ArrayMethods  # what spmd Arrays and traced values both are: isinstance, annotations

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
complexfloating = np.complexfloating
dtype, finfo, iinfo = np.dtype, np.finfo, np.iinfo
issubdtype, result_type, promote_types, can_cast = (
    np.issubdtype,
    np.result_type,
    np.promote_types,
    np.can_cast,
)

nan, inf, pi, e, euler_gamma = np.nan, np.inf, np.pi, np.e, np.euler_gamma
newaxis = None

__all__ = [
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
