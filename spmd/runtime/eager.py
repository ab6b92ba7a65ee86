"""Eager evaluation: a primitive applied to concrete Arrays, NumPy arrays and scalars."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from spmd.core.primitive import Primitive
from spmd.core.trace import aval_of
from spmd.runtime.array import Array
from spmd.sharding.device import default_device
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


def wrap_results(values: Sequence[Any], avals: Sequence[Any], inputs: Sequence[Any], who) -> list:
    from spmd.runtime.put import device_put

    results = []
    for value, aval in zip(values, avals, strict=True):
        value = np.asarray(value)
        if value.dtype != aval.dtype or value.shape != aval.shape:
            raise RuntimeError(
                f"internal error in {who}: computed {value.dtype}{list(value.shape)} but its "
                f"shape rule promised {aval}; please report this."
            )
        results.append(device_put(value, result_sharding(inputs, aval.shape)))
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
    if primitive.rules.per_device is not None or any(_on_a_mesh(a) for a in args):
        try:
            key = tuple(sorted(params.items()))
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            return _one_equation(primitive, key)(*args)
    avals = [aval_of(a) for a in args]
    out_avals = primitive.rules.shape(*avals, **params)
    out = primitive.rules.impl(np, *[to_host(a) for a in args], **params)
    if primitive.multiple_results:
        return wrap_results(out, out_avals, args, primitive)
    return wrap_results([out], [out_avals], args, primitive)[0]
