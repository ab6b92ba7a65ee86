"""The Array API standard's special values of complex ``expm1`` and ``tanh`` where NumPy's
ufuncs (which spmd's primitives compute with) give others.

- ``expm1(a + bi)`` with ``b = ±0`` is ``expm1(a) ± 0i`` exactly: NumPy gives ``-0`` for
  ``±0 + 0i`` and a NaN imaginary part for ``a = +inf`` or NaN. With ``a = -inf`` and ``b``
  infinite or NaN it is ``-1 + 0i``, with ``a = +inf`` ``inf + NaN i`` (NumPy: NaN + NaN i).
- ``tanh(±inf + bi)``, ``b`` finite, is ``±1 + 0i`` with the sign of ``b`` on the zero
  (NumPy's, C99's, is the sign of ``sin(2b)``).

Each result is the primitive's outside those points. Complex ``expm1`` is a custom_jvp with
the primitive's own derivative, ``exp(z) dz``: the corrected value on the real axis depends on
``a`` alone, so its derivative through the ``where`` would lose ``b``'s.
"""

from __future__ import annotations

import math
from typing import Any

from spmd.numpy.shaping import astype
from spmd.prims.elementwise import BINARY, UNARY, imag_p, real_p, where_p
from spmd.transforms.custom_derivatives import custom_jvp

_equal, _and, _not_equal = BINARY["equal"], BINARY["logical_and"], BINARY["not_equal"]
_conj, _signbit, _isfinite, _isinf = (
    UNARY[name] for name in ("conjugate", "signbit", "isfinite", "isinf")
)


@custom_jvp
def expm1(z: Any) -> Any:
    """``expm1`` of a complex ``z`` with the standard's special values."""
    out = UNARY["expm1"].bind(z)
    a, b = real_p.bind(z), imag_p.bind(z)
    on_axis = astype(UNARY["expm1"].bind(a) + 0.0, z.dtype)  # + 0.0: expm1(-0) is +0 here
    on_axis = where_p.bind(_signbit.bind(b), _conj.bind(on_axis), on_axis)
    out = where_p.bind(_equal.bind(b, 0), on_axis, out)
    at_minus_inf = _equal.bind(a, -math.inf)  # -1 + 0 cis(b): the zero has sin(b)'s sign,
    out = where_p.bind(at_minus_inf, complex(-1, 0), out)  # +0 for b infinite or NaN
    below_axis = _and.bind(_isfinite.bind(b), _signbit.bind(UNARY["sin"].bind(b)))
    out = where_p.bind(_and.bind(at_minus_inf, below_axis), _conj.bind(out), out)
    unbounded_b = UNARY["logical_not"].bind(_isfinite.bind(b))
    infinite = complex(math.inf, math.nan)
    return where_p.bind(_and.bind(_equal.bind(a, math.inf), unbounded_b), infinite, out)


@expm1.defjvp
def _expm1_jvp(primals: tuple, tangents: tuple) -> tuple:
    (z,), (dz,) = primals, tangents
    out = expm1(z)
    return out, (out + 1) * dz


def tanh(z: Any) -> Any:
    """``tanh`` of a complex ``z`` with the standard's special values."""
    out = UNARY["tanh"].bind(z)
    a, b = real_p.bind(z), imag_p.bind(z)
    wrong_sign = _not_equal.bind(_signbit.bind(imag_p.bind(out)), _signbit.bind(b))
    at_infinity = _and.bind(_isinf.bind(a), _isfinite.bind(b))
    return where_p.bind(_and.bind(at_infinity, wrong_sign), _conj.bind(out), out)


COMPLEX = {"expm1": expm1, "tanh": tanh}  # the functions spmd.numpy's complex inputs go to
