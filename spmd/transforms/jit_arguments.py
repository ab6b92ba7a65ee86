"""jit's arguments: static ones completed from the function's signature, the key of the
compilation cache (shapes, dtypes, shardings, the x64 mode), arguments brought to the x64
mode's dtypes, and arguments moved to ``in_shardings``."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spmd.core.dtypes import TO_32, canonical_host, check_python_int, is_canonical
from spmd.core.trace import Tracer, aval_of
from spmd.errors import ShardingError, SpmdError, SpmdTypeError, SpmdValueError
from spmd.prims.shape import convert_element_type_p
from spmd.runtime.array import Array
from spmd.runtime.put import _is_target, device_put


def as_tuple(x: int | Sequence[int] | str | Sequence[str] | None) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


_NAMED = inspect.Parameter.POSITIONAL_OR_KEYWORD


def static_arguments(fun: Callable, argnums: tuple, argnames: tuple) -> tuple[tuple, tuple]:
    """``static_argnums`` and ``static_argnames`` completed from each other through
    ``fun``'s signature, as JAX does: given one, the other names the same parameters (those
    that can be passed either way); given both, each is kept as given. Checked against the
    signature: a position past its positional parameters (without ``*args``), or a name it
    does not take (without ``**kwargs``), is an error."""
    for i in argnums:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise SpmdTypeError(f"jit: static_argnums must be ints, got {i!r}.")
    for name in argnames:
        if not isinstance(name, str):
            raise SpmdTypeError(f"jit: static_argnames must be strings, got {name!r}.")
    argnums = tuple(int(i) for i in argnums)
    try:
        parameters = inspect.signature(fun).parameters
    except (TypeError, ValueError):  # builtins and some callables have no signature
        return argnums, argnames
    kinds = [p.kind for p in parameters.values()]
    names = list(parameters)
    if argnums and not argnames:
        argnames = tuple(k for i, k in enumerate(names) if kinds[i] == _NAMED and i in argnums)
    elif argnames and not argnums:
        argnums = tuple(i for i, k in enumerate(names) if kinds[i] == _NAMED and k in argnames)
    positional = (inspect.Parameter.POSITIONAL_ONLY, _NAMED)
    if inspect.Parameter.VAR_POSITIONAL not in kinds:
        count = sum(kind in positional for kind in kinds)
        for i in argnums:
            if i >= count:
                raise SpmdValueError(
                    f"jit: static_argnums has {i}, but the function takes only {count} "
                    f"positional arguments ({', '.join(names[:count]) or 'none'}); name a "
                    f"parameter it has, or use static_argnames."
                )
    only_positional = {k for k, kind in zip(names, kinds, strict=True)
                       if kind == inspect.Parameter.POSITIONAL_ONLY}  # fmt: skip
    if bad := sorted(only_positional & set(argnames)):
        raise SpmdValueError(
            f"jit: static_argnames names {bad}, which are positional-only parameters; "
            f"use static_argnums for them."
        )
    if inspect.Parameter.VAR_KEYWORD not in kinds:
        keyword = {k for k, kind in zip(names, kinds, strict=True)
                   if kind in (_NAMED, inspect.Parameter.KEYWORD_ONLY)}  # fmt: skip
        if bad := sorted(set(argnames) - keyword):
            raise SpmdValueError(
                f"jit: static_argnames names {bad}, but the function takes no such "
                f"argument (its parameters: {', '.join(names) or 'none'})."
            )
    return argnums, tuple(argnames)


SCALAR_TYPES = (bool, int, float, complex)
LEAF_TYPES = frozenset({np.ndarray, Array, *SCALAR_TYPES})


def leaf_key(x: Any) -> tuple | type:
    """What of an argument the compiled program depends on: its type, shape, dtype, sharding."""
    kind = type(x)
    if kind is np.ndarray:
        return (x.shape, x.dtype)
    if kind is Array:
        return (x.shape, x.dtype, x.sharding)
    if kind in SCALAR_TYPES:
        return kind
    aval = aval_of(x)
    return (aval.shape, aval.dtype, aval.weak_type, kind)


def arguments_32(leaves: Sequence[Any], label: str) -> list:
    """With x64 off, the argument leaves in 32-bit dtypes, as JAX's jit takes them: 64-bit
    host data and Arrays are converted (integers that do not fit raise), a Python int must
    fit int32 (Python scalars stay weak, and so stay Python scalars)."""
    converted = []
    for i, leaf in enumerate(leaves):
        kind = type(leaf)
        if kind is int:
            check_python_int(leaf, f"{label} argument {i}")
        elif kind is np.ndarray or isinstance(leaf, np.generic):
            leaf = canonical_host(leaf, f"{label} argument {i}")
        elif kind is Array and not is_canonical(leaf.dtype):
            leaf = convert_element_type_p.bind(leaf, new_dtype=TO_32[leaf.dtype])
        converted.append(leaf)
    return converted


def outputs_32(leaves: Sequence[Any], label: str) -> list:
    """With x64 off, what a traced function returns in 32-bit dtypes: host data and Python
    scalars become 32-bit NumPy values, and traced values of a 64-bit dtype (a Python-scalar
    argument returned as it is) or weak ones are converted."""
    converted = []
    for i, leaf in enumerate(leaves):
        if type(leaf) in SCALAR_TYPES:
            leaf = np.asarray(leaf)
        if isinstance(leaf, np.ndarray | np.generic):
            leaf = canonical_host(leaf, f"{label} output {i}")
        elif isinstance(leaf, Tracer) and (leaf.weak_type or not is_canonical(leaf.dtype)):
            leaf = convert_element_type_p.bind(leaf, new_dtype=TO_32.get(leaf.dtype, leaf.dtype))
        converted.append(leaf)
    return converted


def placed_inputs(in_shardings: Any, args: tuple, who: str) -> tuple:
    """The positional ``args`` moved to ``in_shardings`` (one target, or one per argument);
    errors name ``who`` (jit(f) in_shardings) and the argument."""
    targets = in_shardings
    if _is_target(targets):
        targets = (targets,) * len(args)
    if not isinstance(targets, (tuple, list)) or len(targets) != len(args):
        given = len(targets) if isinstance(targets, (tuple, list)) else type(targets).__name__
        raise ShardingError(
            f"{who} has {given} entries but the call passed {len(args)} positional "
            f"arguments; give one sharding (or None) per positional argument, or one "
            f"sharding for all of them."
        )
    placed = []
    for i, (arg, target) in enumerate(zip(args, targets, strict=True)):
        try:
            placed.append(device_put(arg, target))
        except SpmdError as error:
            raise type(error)(f"{who}[{i}] for argument {i}: {error}") from None
    return tuple(placed)
