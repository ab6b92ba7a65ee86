"""spmd.nn.initializers: jax.nn.initializers' weight initializers, each ``init(key, shape,
dtype)`` drawing with spmd.random.

``variance_scaling(scale, mode, distribution)`` gives samples of variance ``scale / n``, with
``n`` the fan-in, fan-out or their average; glorot (xavier), he (kaiming) and lecun are its
named settings. Truncated normals are drawn by inverting the normal CDF between -2 and 2.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import spmd.numpy as snp
from spmd.core.aval import check_dtype
from spmd.errors import ShapeError, SpmdTypeError, SpmdValueError
from spmd.lax.special import erf_inv
from spmd.random import normal as random_normal
from spmd.random import uniform as random_uniform

__all__ = ["constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
           "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal",
           "ones", "truncated_normal", "uniform", "variance_scaling", "xavier_normal",
           "xavier_uniform", "zeros"]  # fmt: skip

Initializer = Callable[..., Any]
AxisSpec = int | Sequence[int]
_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")
# The standard deviation of a standard normal truncated to (-2, 2), and its CDF at -2.
_TRUNCATED_STDDEV = 0.87962566103423978
_CDF_MINUS_2 = 0.5 * math.erfc(2 / math.sqrt(2))


def _shape(name: str, shape: int | Sequence[int]) -> tuple[int, ...]:
    try:
        return (
            (operator.index(shape),)
            if not isinstance(shape, Sequence)
            else tuple(operator.index(n) for n in shape)
        )
    except TypeError:
        raise SpmdTypeError(
            f"spmd.nn.initializers.{name}: shape must be an int or a sequence of ints, not "
            f"{shape!r}; e.g. init(key, (784, 512))."
        ) from None


def _float(name: str, dtype: Any) -> np.dtype:
    dtype = check_dtype(np.float32 if dtype is None else dtype)
    if dtype.kind != "f":
        raise SpmdTypeError(
            f"spmd.nn.initializers.{name}: dtype {dtype} is not a float dtype; these "
            f"initializers draw real floats, e.g. dtype=np.float32."
        )
    return dtype


def zeros(key: Any, shape: int | Sequence[int], dtype: Any = np.float32) -> Any:
    """All zeros (``key`` is unused). Example: ``zeros(key, (512,))``."""
    return snp.zeros(_shape("zeros", shape), check_dtype(dtype))


def ones(key: Any, shape: int | Sequence[int], dtype: Any = np.float32) -> Any:
    """All ones (``key`` is unused). Example: ``ones(key, (512,))``."""
    return snp.ones(_shape("ones", shape), check_dtype(dtype))


def constant(value: Any, dtype: Any = np.float32) -> Initializer:
    """An initializer filling with ``value`` (broadcast to the shape)."""

    def init(key: Any, shape: int | Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape("constant", shape)
        return snp.broadcast_to(snp.asarray(value, dtype=check_dtype(dtype)), shape)

    return init


def uniform(scale: float = 1e-2, dtype: Any = np.float32) -> Initializer:
    """An initializer drawing uniformly from ``[0, scale)``, as jax.nn.initializers.uniform."""

    def init(key: Any, shape: int | Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _float("uniform", dtype)
        return random_uniform(key, _shape("uniform", shape), dtype) * scale

    return init


def normal(stddev: float = 1e-2, dtype: Any = np.float32) -> Initializer:
    """An initializer drawing from a normal of mean 0 and standard deviation ``stddev``."""

    def init(key: Any, shape: int | Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _float("normal", dtype)
        return random_normal(key, _shape("normal", shape), dtype) * stddev

    return init


def _truncated_standard_normal(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Standard normal samples conditioned on (-2, 2): a uniform between the CDF's values
    at -2 and 2, through the normal quantile ``sqrt(2) * erfinv(2u - 1)``."""
    low, high = _CDF_MINUS_2, 1 - _CDF_MINUS_2
    u = random_uniform(key, shape, dtype, minval=low, maxval=high)
    return snp.clip(math.sqrt(2) * erf_inv(2 * u - 1), -2, 2)


def truncated_normal(
    stddev: float = 1e-2, dtype: Any = np.float32, lower: float = -2.0, upper: float = 2.0
) -> Initializer:
    """An initializer drawing ``stddev`` times a standard normal truncated to (-2, 2) (only
    those bounds are supported)."""
    if (lower, upper) != (-2.0, 2.0):
        raise SpmdValueError(
            f"spmd.nn.initializers.truncated_normal: lower={lower}, upper={upper}; only the "
            f"default bounds (-2, 2) are supported. Drop lower and upper."
        )

    def init(key: Any, shape: int | Sequence[int], dtype: Any = dtype) -> Any:
        dtype = _float("truncated_normal", dtype)
        return _truncated_standard_normal(key, _shape("truncated_normal", shape), dtype) * stddev

    return init


def _size(shape: tuple[int, ...], axes: AxisSpec, what: str, name: str) -> int:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    try:
        return math.prod(shape[a] for a in axes)
    except IndexError:
        raise ShapeError(
            f"spmd.nn.initializers.{name}: {what}={axes} is out of range for a weights shape "
            f"{shape} of rank {len(shape)}; name axes of the shape."
        ) from None


def _fans(name, shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
    """Fan-in and fan-out: the input and output sizes times the receptive field (the axes
    that are none of input, output or batch)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ShapeError(
            f"spmd.nn.initializers.{name}: cannot tell the input and output sizes of a "
            f"{len(shape)}-d weights shape {shape} with the default in_axis=-2; give a shape "
            f"of at least 2 dimensions, or in_axis and out_axis explicitly."
        )
    in_size = _size(shape, in_axis, "in_axis", name)
    out_size = _size(shape, out_axis, "out_axis", name)
    batch_size = _size(shape, batch_axis, "batch_axis", name)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def variance_scaling(
    scale: float,
    mode: str,
    distribution: str,
    in_axis: AxisSpec = -2,
    out_axis: AxisSpec = -1,
    batch_axis: AxisSpec = (),
    dtype: Any = np.float32,
) -> Initializer:
    """An initializer of variance ``scale / n``: ``n`` the fan-in, fan-out, their mean or
    geometric mean (``mode``); ``distribution`` "truncated_normal" (cut at 2 standard
    deviations, then rescaled), "normal" or "uniform". Example:
    ``variance_scaling(2.0, "fan_in", "normal")(key, (784, 512))``."""
    if mode not in _MODES or distribution not in _DISTRIBUTIONS:
        raise SpmdValueError(
            f"spmd.nn.initializers.variance_scaling: mode={mode!r}, distribution="
            f"{distribution!r}; mode must be one of {_MODES} and distribution one of "
            f"{_DISTRIBUTIONS}."
        )

    def init(key: Any, shape: int | Sequence[int], dtype: Any = dtype) -> Any:
        shape = _shape("variance_scaling", shape)
        dtype = _float("variance_scaling", dtype)
        fan_in, fan_out = _fans("variance_scaling", shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]  # fmt: skip
        stddev = math.sqrt(scale / denominator)
        if distribution == "truncated_normal":
            sample = _truncated_standard_normal(key, shape, dtype)
            return sample * (stddev / _TRUNCATED_STDDEV)
        if distribution == "normal":
            return random_normal(key, shape, dtype) * stddev
        limit = math.sqrt(3) * stddev  # uniform on (-a, a) has variance a**2 / 3
        return random_uniform(key, shape, dtype, minval=-limit, maxval=limit)

    return init


def _named(scale: float, mode: str, distribution: str, name: str, doc: str):
    def initializer(
        in_axis: AxisSpec = -2,
        out_axis: AxisSpec = -1,
        batch_axis: AxisSpec = (),
        dtype: Any = np.float32,
    ) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    initializer.__name__ = initializer.__qualname__ = name
    initializer.__doc__ = (
        f"{doc} {_VARIANCE.format(scale, mode, distribution)}. Example: "
        f"``{name}()(key, (784, 512))``."
    )
    return initializer


_VARIANCE = "variance_scaling({}, {!r}, {!r})"
glorot_uniform = _named(1.0, "fan_avg", "uniform", "glorot_uniform", "Glorot/Xavier uniform:")
glorot_normal = _named(1.0, "fan_avg", "truncated_normal", "glorot_normal", "Glorot/Xavier normal:")
lecun_uniform = _named(1.0, "fan_in", "uniform", "lecun_uniform", "LeCun uniform:")
lecun_normal = _named(1.0, "fan_in", "truncated_normal", "lecun_normal", "LeCun normal:")
he_uniform = _named(2.0, "fan_in", "uniform", "he_uniform", "He/Kaiming uniform:")
he_normal = _named(2.0, "fan_in", "truncated_normal", "he_normal", "He/Kaiming normal:")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal
