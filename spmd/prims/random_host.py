"""Random primitives compute in NumPy on the host, whatever the backend: Threefry's uint32
arithmetic and the samplers' loops are NumPy code, and the numbers must not depend on the
array library. ``on_host`` wraps such an impl for any namespace."""

from __future__ import annotations

import functools

import numpy as np

from spmd.prims import namespace


def _to_numpy(a) -> np.ndarray:
    try:
        return np.from_dlpack(a)
    except BufferError:  # NumPy before 2.1 takes no read-only array through DLPack
        return np.asarray(a)


def on_host(impl):
    """``impl(np, *arrays, **params)`` for any namespace: arrays of another namespace go to
    NumPy (through DLPack) and the result comes back to the first array's device."""

    @functools.wraps(impl)
    def run(xp, *arrays, **params):
        if xp is np:
            return impl(np, *(np.asarray(a) for a in arrays), **params)
        device = next((namespace.device_of(a) for a in arrays if not namespace.is_scalar(a)), None)
        host = [a if namespace.is_scalar(a) else _to_numpy(a) for a in arrays]
        result = impl(np, *host, **params)
        return xp.asarray(result, device=device)

    return run
