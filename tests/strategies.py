"""Hypothesis strategies: meshes of 1-8 devices with 1-3 axes, partition specs, arrays."""

import numpy as np
from hypothesis import strategies as st

import spmd
from spmd import Mesh, NamedSharding, P, Sharding, SingleDeviceSharding

AXIS_NAMES = ("x", "y", "z")
DTYPES = (np.bool_, np.int32, np.int64, np.float32, np.float64, np.complex64)


PRIME_FACTORS = {1: [], 2: [2], 3: [3], 4: [2, 2], 6: [2, 3], 8: [2, 2, 2]}


@st.composite
def meshes(draw, device_counts=(1, 2, 3, 4, 6, 8)) -> Mesh:
    """A mesh over a random subset of the devices, in random order, with 1-3 axes."""
    count = draw(st.sampled_from(device_counts))
    rank = draw(st.integers(1, 3))
    shape = [1] * rank
    for factor in PRIME_FACTORS[count]:  # hand each prime factor to a random axis
        shape[draw(st.integers(0, rank - 1))] *= factor
    names = draw(st.permutations(AXIS_NAMES))[:rank]
    devices = draw(st.permutations(spmd.devices()))[:count]
    grid = np.empty(count, dtype=object)
    grid[:] = devices
    return Mesh(grid.reshape(shape), tuple(names))


@st.composite
def specs(draw, mesh: Mesh, ndim: int) -> P:
    """A spec with at most ``ndim`` entries, each None, one axis or a tuple of axes."""
    unused = list(draw(st.permutations(mesh.axis_names)))
    entries = []
    for _ in range(draw(st.integers(0, ndim))):
        take = draw(st.integers(0, min(3, len(unused))))
        names, unused = unused[:take], unused[take:]
        entry = None if not names else names[0] if take == 1 and draw(st.booleans()) else names
        entries.append(tuple(entry) if isinstance(entry, list) else entry)
    return P(*entries)


shapes = st.lists(st.integers(0, 13), min_size=0, max_size=4).map(tuple)


@st.composite
def shardings(draw, ndim: int, device_counts=(1, 2, 3, 4, 6, 8)) -> NamedSharding:
    mesh = draw(meshes(device_counts))
    kind = draw(st.sampled_from(("device", "pinned_host")))
    return NamedSharding(mesh, draw(specs(mesh, ndim)), kind)


@st.composite
def any_shardings(draw, ndim: int) -> Sharding:
    """A NamedSharding, or now and then the whole array on one device."""
    if draw(st.integers(0, 4)) == 0:
        return SingleDeviceSharding(draw(st.sampled_from(spmd.devices())))
    return draw(shardings(ndim))


@st.composite
def arrays(draw, shape: tuple) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = rng.integers(-100, 100, size=shape)
    if dtype == np.bool_:
        return values > 0
    if dtype.kind == "c":
        return (values + 1j * rng.integers(-9, 9, size=shape)).astype(dtype)
    return (values / (4 if dtype.kind == "f" else 1)).astype(dtype)
