"""shard_map against a reference that loops over mesh coordinates, on sampled cases.

The reference slices each device's blocks with plain NumPy, calls the function on them,
computes collectives by looping over the devices of each group (JAX's documented
semantics), and writes each device's result back. Cases are drawn from a seeded generator
(SPMD_SHARD_MAP_SEED): functions × meshes (8,), (2, 4), (2, 2, 2) × specs, uneven included,
each called eagerly (the body runs on concrete blocks) and under jit (traced).
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np
import pytest

import spmd
from spmd import P
from spmd.lax import (
    all_gather,
    all_to_all,
    axis_index,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)

SEED = int(os.environ.get("SPMD_SHARD_MAP_SEED", "0"))
MESHES = {"8": ((8,), ("x",)), "2x4": ((2, 4), ("x", "y")), "2x2x2": ((2, 2, 2), ("x", "y", "z"))}


def mesh_of(key: str) -> spmd.Mesh:
    shape, names = MESHES[key]
    return spmd.make_mesh(shape, names)


# --- the reference ---------------------------------------------------------------------------


def coords_of(mesh: spmd.Mesh) -> list[tuple[int, ...]]:
    return list(itertools.product(*map(range, mesh.devices.shape)))


def block_bounds(n: int, parts: int, index: int) -> tuple[int, int]:
    chunk = -(-n // parts)
    start = min(index * chunk, n)
    return start, min(start + chunk, n)


def block_index(mesh: spmd.Mesh, coord, axes) -> tuple[int, int]:
    """(block index, number of blocks) of a dimension split over ``axes`` at ``coord``."""
    sizes = dict(mesh.shape)
    where = dict(zip(mesh.axis_names, coord, strict=True))
    index, parts = 0, 1
    for a in axes:
        index = index * sizes[a] + where[a]
        parts *= sizes[a]
    return index, parts


def block_slices(mesh, coord, spec: P, shape) -> tuple[slice, ...]:
    out = []
    for d, axes in enumerate(spec.dims(len(shape))):
        index, parts = block_index(mesh, coord, axes)
        out.append(slice(*block_bounds(shape[d], parts, index)))
    return tuple(out)


def device_blocks(mesh, in_specs, args) -> dict:
    """Mesh coordinate → that device's blocks of ``args`` split by ``in_specs``."""
    return {
        coord: [
            a[block_slices(mesh, coord, s, a.shape)] for a, s in zip(args, in_specs, strict=True)
        ]
        for coord in coords_of(mesh)
    }


def assemble(mesh, out_spec: P, per_device: dict) -> np.ndarray:
    """The global result whose ``out_spec`` blocks are ``per_device`` (replicas must agree)."""
    first = next(iter(per_device.values()))
    dims = out_spec.dims(first.ndim)
    shape = []
    for d in range(first.ndim):
        sizes = {}
        for coord, block in per_device.items():
            sizes.setdefault(block_index(mesh, coord, dims[d])[0], block.shape[d])
        shape.append(sum(sizes.values()))
    out = np.zeros(shape, first.dtype)
    for coord, block in per_device.items():
        index = block_slices(mesh, coord, out_spec, shape)
        out[index] = block
    for coord, block in per_device.items():  # replicas must agree
        np.testing.assert_array_equal(out[block_slices(mesh, coord, out_spec, shape)], block)
    return out


def group_of(mesh, coord, axes):
    """The coordinates of ``coord``'s group over ``axes``, ordered by index along ``axes``."""
    names = mesh.axis_names
    keep = [i for i, n in enumerate(names) if n not in axes]
    members = [c for c in coords_of(mesh) if all(c[i] == coord[i] for i in keep)]
    return sorted(members, key=lambda c: block_index(mesh, c, axes)[0])


def reference_collective(mesh, name: str, params: dict, values: dict) -> dict:
    axes = params["axes"]
    out = {}
    for coord in coords_of(mesh):
        group = group_of(mesh, coord, axes)
        mine = block_index(mesh, coord, axes)[0]
        members = [values[c] for c in group]
        n = len(group)
        if name in ("psum", "pmean", "pmax", "pmin"):
            combine = {"psum": np.sum, "pmean": np.mean, "pmax": np.max, "pmin": np.min}[name]
            out[coord] = combine(np.stack(members), axis=0)
        elif name == "all_gather":
            joined = np.concatenate if params["tiled"] else np.stack
            out[coord] = joined(members, axis=params["axis"])
        elif name == "psum_scatter":
            total = np.sum(np.stack(members), axis=0)
            dim = params["scatter_dimension"]
            chunk = np.split(total, n, axis=dim)[mine]
            out[coord] = chunk if params["tiled"] else np.squeeze(chunk, dim)
        elif name == "all_to_all":
            split, concat = params["split_axis"], params["concat_axis"]
            pieces = [np.split(m, n, axis=split)[mine] for m in members]
            if params["tiled"]:
                out[coord] = np.concatenate(pieces, axis=concat)
            else:
                out[coord] = np.stack([np.squeeze(p, split) for p in pieces], axis=concat)
        elif name == "ppermute":
            in_mesh_order = tuple(a for a in mesh.axis_names if a in axes)
            me = block_index(mesh, coord, in_mesh_order)[0]
            sources = {d: s for s, d in params["perm"]}
            if me in sources:
                sender = next(
                    c for c in group if block_index(mesh, c, in_mesh_order)[0] == sources[me]
                )
                out[coord] = values[sender]
            else:
                out[coord] = np.zeros_like(values[coord])
        elif name == "axis_index":
            out[coord] = np.int32(mine)
        else:
            raise AssertionError(name)
    return out


# --- sampled cases ---------------------------------------------------------------------------


def random_spec(rng, names, ndim: int) -> P:
    free = list(names)
    rng.shuffle(free)
    entries = []
    for _ in range(ndim):
        take = int(rng.integers(0, min(len(free), 2) + 1)) if free else 0
        chosen, free = free[:take], free[take:]
        entries.append(None if not chosen else chosen[0] if len(chosen) == 1 else tuple(chosen))
    return P(*entries)


LOCAL_FUNCTIONS = {
    "affine": (lambda b: b * 2 + 1, lambda b: b * 2 + 1),
    "square_minus_mean": (lambda b: b * b - 3, lambda b: b * b - 3),
    "cumsum_last": (lambda b: spmd.numpy.cumsum(b, axis=-1), lambda b: np.cumsum(b, axis=-1)),
    "where": (
        lambda b: spmd.numpy.where(b > 2, b, -b),
        lambda b: np.where(b > 2, b, -b),
    ),
    "flip_first": (lambda b: b[::-1], lambda b: b[::-1]),
    "two_args": (None, None),
}


def local_cases(count: int):
    rng = np.random.default_rng(SEED)
    cases = []
    for i in range(count):
        key = list(MESHES)[i % len(MESHES)]
        names = MESHES[key][1]
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(0, 11)) for _ in range(ndim))
        spec = random_spec(rng, names, ndim)
        name = list(LOCAL_FUNCTIONS)[int(rng.integers(len(LOCAL_FUNCTIONS)))]
        cases.append(pytest.param(key, shape, spec, name, id=f"{key}-{name}-{shape}-{spec}"))
    return cases


def called(f, mode: str):
    """``f`` called eagerly (the body runs on concrete blocks) or under jit (traced)."""
    return f if mode == "eager" else spmd.jit(f)


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize(("mesh_key", "shape", "spec", "name"), local_cases(60))
def test_local_functions_match_the_reference_on_any_split(mesh_key, shape, spec, name, mode):
    mesh = mesh_of(mesh_key)
    rng = np.random.default_rng(abs(hash((shape, name))) % 2**32)
    x = rng.integers(-5, 9, size=shape).astype(np.float32)
    if name == "two_args":
        y = rng.integers(-5, 9, size=shape).astype(np.float32)
        f = spmd.shard_map(lambda a, b: a * b - a, mesh, in_specs=(spec, spec), out_specs=spec)
        got = called(f, mode)(x, y)
        blocks = device_blocks(mesh, [spec, spec], [x, y])
        want = assemble(mesh, spec, {c: a * b - a for c, (a, b) in blocks.items()})
    else:
        ours, oracle = LOCAL_FUNCTIONS[name]
        f = spmd.shard_map(ours, mesh, in_specs=spec, out_specs=spec)
        got = called(f, mode)(x)
        blocks = device_blocks(mesh, [spec], [x])
        want = assemble(mesh, spec, {c: oracle(b) for c, (b,) in blocks.items()})
    assert isinstance(got, spmd.Array)
    assert got.sharding == spmd.NamedSharding(mesh, spec)
    np.testing.assert_array_equal(np.asarray(got), want)


def parts(mesh_key: str, axes) -> int:
    shape, names = MESHES[mesh_key]
    sizes = dict(zip(names, shape, strict=True))
    return math.prod(sizes[a] for a in axes)


def collective_params(rng, name: str, mesh_key: str, block_shape) -> dict | None:
    """Random parameters for ``name`` over a random subset of the mesh axes (in random
    order) that fit ``block_shape``, or None if none do."""
    names = MESHES[mesh_key][1]
    axes = tuple(str(a) for a in rng.permutation(names)[: int(rng.integers(1, len(names) + 1))])
    n = parts(mesh_key, axes)
    ndim = len(block_shape)
    params = {"axes": axes}
    divisible = [d for d in range(ndim) if block_shape[d] and block_shape[d] % n == 0]
    if name == "all_gather":
        tiled = bool(rng.integers(2)) and ndim > 0
        params.update(axis=int(rng.integers(0, ndim + (0 if tiled else 1))), tiled=tiled)
    elif name in ("psum_scatter", "all_to_all"):
        if not divisible:
            return None
        dim = divisible[int(rng.integers(len(divisible)))]
        tiled = block_shape[dim] != n or bool(rng.integers(2))
        if name == "psum_scatter":
            params.update(scatter_dimension=dim, tiled=tiled)
        else:
            params.update(split_axis=dim, concat_axis=int(rng.integers(ndim)), tiled=tiled)
    elif name == "ppermute":
        order = rng.permutation(n)
        count = int(rng.integers(0, n + 1))
        params["perm"] = [(int(s), int(d)) for s, d in zip(range(n), order, strict=True)][:count]
    return params


COLLECTIVES = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
               "ppermute", "axis_index"]  # fmt: skip


def call_collective(name: str, value, params: dict):
    axes = params["axes"]
    if name in ("psum", "pmean", "pmax", "pmin"):
        return {"psum": psum, "pmean": pmean, "pmax": pmax, "pmin": pmin}[name](value, axes)
    if name == "all_gather":
        return all_gather(value, axes, axis=params["axis"], tiled=params["tiled"])
    if name == "psum_scatter":
        return psum_scatter(
            value, axes, scatter_dimension=params["scatter_dimension"], tiled=params["tiled"]
        )
    if name == "all_to_all":
        return all_to_all(
            value, axes, params["split_axis"], params["concat_axis"], tiled=params["tiled"]
        )
    if name == "ppermute":
        return ppermute(value, axes, params["perm"])
    return value + axis_index(axes)


def collective_cases(count: int):
    """Even splits, and uneven ones whose first dimension the body sums away first (so that
    every device of a group holds one shape, as collectives need)."""
    rng = np.random.default_rng(SEED + 1)
    cases = []
    for _ in range(50 * count):
        if len(cases) == count:
            break
        key = list(MESHES)[len(cases) % len(MESHES)]
        ndim = int(rng.integers(1, 4))
        spec = random_spec(rng, MESHES[key][1], ndim)
        counts = [parts(key, axes) for axes in spec.dims(ndim)]
        uneven = counts[0] > 1 and rng.integers(3) == 0
        wide = int(rng.integers(ndim))  # one dimension with room for any group size
        shape = [
            k * int(rng.choice((1, 2, 4, 8) if d == wide else (1, 2))) for d, k in enumerate(counts)
        ]
        if uneven:
            shape[0] += int(rng.integers(1, counts[0]))
        block = [n // k for n, k in zip(shape, counts, strict=True)]
        params = collective_params(rng, COLLECTIVES[len(cases) % len(COLLECTIVES)], key,
                                   tuple(block[1:] if uneven else block))  # fmt: skip
        if params is None:
            continue
        name = COLLECTIVES[len(cases) % len(COLLECTIVES)]
        case_id = f"{key}-{name}-{tuple(shape)}-{spec}-{len(cases)}"
        cases.append(pytest.param(key, tuple(shape), spec, name, params, uneven, id=case_id))
    return cases


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize(
    ("mesh_key", "shape", "spec", "name", "params", "reduce_first"), collective_cases(120)
)
def test_collectives_match_the_reference(mesh_key, shape, spec, name, params, reduce_first, mode):
    mesh = mesh_of(mesh_key)
    everyone = tuple(mesh.axis_names)
    rng = np.random.default_rng(len(shape) + 7 * sum(shape))
    x = rng.integers(-9, 10, size=shape).astype(np.float64)

    def pre(b):
        return b.sum(axis=0) if reduce_first else b * 3 - 1

    def body(b):
        return call_collective(name, pre(b), params)[None]

    f = spmd.shard_map(body, mesh, in_specs=spec, out_specs=P(everyone))
    got = np.asarray(called(f, mode)(x))
    blocks = device_blocks(mesh, [spec], [x])
    values = {c: pre(b) for c, (b,) in blocks.items()}
    if name == "axis_index":
        index = reference_collective(mesh, name, params, values)
        outs = {c: values[c] + index[c] for c in values}
    else:
        outs = reference_collective(mesh, name, params, values)
    want = np.stack([outs[c] for c in coords_of(mesh)])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sampled_cases_cover_every_collective_mesh_and_uneven_splits():
    cases = [p.values for p in collective_cases(120)]
    assert {c[3] for c in cases} == set(COLLECTIVES)
    assert {c[0] for c in cases} == set(MESHES)
    assert any(c[5] for c in cases)  # uneven inputs
    local = [p.values for p in local_cases(60)]
    uneven = 0
    for key, shape, spec, _ in local:
        sizes = dict(zip(MESHES[key][1], MESHES[key][0], strict=True))
        for n, axes in zip(shape, spec.dims(len(shape)), strict=True):
            uneven += n % math.prod(sizes[a] for a in axes) != 0
    assert uneven >= 10
