"""Eager evaluation: a primitive applied to concrete Arrays, NumPy arrays and scalars."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.interpret import apply
from spmd.core.primitive import Primitive
from spmd.core.trace import aval_of
from spmd.runtime.array import Array
from spmd.runtime.buffers import host_view, on_device
from spmd.sharding.device import Device, default_device
from spmd.sharding.named import NamedSharding, Sharding, SingleDeviceSharding
from spmd.sharding.spec import PartitionSpec


def result_sharding(inputs: Sequence[Any], shape: tuple[int, ...]) -> Sharding:
    """A sensible sharding for a result: that of an input of the same shape, else replicated
    over the first input's mesh, else the default device."""
    arrays = [a for a in inputs if isinstance(a, Array)]
    for a in arrays:
        if a.shape == shape:
            return a.sharding
    for a in arrays:
        if isinstance(a.sharding, NamedSharding):
            return NamedSharding(a.sharding.mesh, PartitionSpec(), a.sharding.memory_kind)
    return arrays[0].sharding if arrays else SingleDeviceSharding(default_device())


def to_host(x: Any) -> Any:
    """Arrays gathered to NumPy; Python scalars kept (they promote weakly), the rest as is."""
    return np.asarray(x) if isinstance(x, Array) else x


def _device_of(args: Sequence[Any]) -> Device:
    """Where an eager operation runs: the device of its first Array on one device (the
    default device when none is)."""
    for a in args:
        if type(a) is Array and len(a._buffers) == 1:
            return next(iter(a._buffers))
    return default_device()


def _operand(x: Any, device: Device) -> Any:
    """``x`` as ``device``'s implementation takes it: its own buffer, a Python scalar, or a
    host value moved there."""
    if type(x) is Array and x._buffers.keys() == {device}:
        return x._buffers[device]
    if type(x) in (bool, int, float, complex):
        return x
    value = to_host(x)
    return value if device.backend == "numpy" else on_device(device, np.asarray(value))


def wrap_results(
    values: Sequence[Any],
    avals: Sequence[Any],
    inputs: Sequence[Any],
    who,
    device: Device,
    operands: Sequence[Any] = (),
) -> list:
    from spmd.runtime.put import device_put

    library = device.library
    results = []
    for value, aval in zip(values, avals, strict=True):
        if device.backend == "numpy" and any(value is op for op in operands):
            value = np.array(value, copy=True)  # an operation that gave back its operand
        kept = library.result(value, aval.dtype, device.local_index)
        if kept is None or tuple(kept.shape) != aval.shape:
            got = np.asarray(host_view(device, value))
            raise RuntimeError(
                f"internal error in {who}: computed {got.dtype}{list(got.shape)} but its "
                f"shape rule promised {aval}; please report this."
            )
        sharding = result_sharding(inputs, aval.shape)
        if sharding.device_set == {device}:
            results.append(Array._from_buffers(sharding, {device: kept}, aval.shape, aval.dtype))
        else:
            results.append(device_put(np.asarray(host_view(device, kept)), sharding))
    return results


def _on_a_mesh(x: Any) -> bool:
    return type(x) is Array and isinstance(x.sharding, NamedSharding) and x.sharding.mesh.size > 1


compile_function: Any = None  # jit, set by spmd/__init__: runtime never imports transforms


@functools.lru_cache(maxsize=4096)
def _one_equation(primitive: Primitive, params: tuple) -> Any:
    """A jitted function applying ``primitive``: sharded operands run through the partitioner
    and the executor, exactly as inside jit."""
    keywords = dict(params)
    jitted = compile_function(lambda *args: primitive.bind(*args, **keywords))
    jitted.label = primitive.name  # errors name the operation, not jit(<lambda>)
    return jitted


def run_eagerly(primitive: Primitive, args: tuple, params: dict) -> Any:
    # Sharded operands, and calls of per-device programs (shard_map, pmap: a derivative binds
    # them outside any trace), run through the partitioner and the executor.
    if (primitive.rules.per_device is not None and "mesh" in params) or any(
        _on_a_mesh(a) for a in args
    ):
        try:
            key = tuple(sorted(params.items()))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            return _one_equation(primitive, key)(*args)
    avals = [aval_of(a) for a in args]
    out_avals = primitive.rules.shape(*avals, **params)
    device = _device_of(args)
    operands = [_operand(a, device) for a in args]
    out = apply(primitive, device.library.xp, operands, params, device.backend)
    if primitive.multiple_results:
        return wrap_results(out, out_avals, args, primitive, device, operands)
    return wrap_results(out, [out_avals], args, primitive, device, operands)[0]
