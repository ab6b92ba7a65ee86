"""Process-wide settings: their defaults, environment overrides and validated updates, and
context-local overrides of those a ``with`` block may change (``config.overriding``)."""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from spmd.errors import ConfigError


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit():
            raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _positive_int_or_none(name: str, value: Any) -> int | None:
    return None if value is None else _positive_int(name, value)


def _positive_float(name: str, value: Any) -> float:
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not number > 0:
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}.")
    return number


def _backend_name(name: str, value: Any) -> str:
    choices = ("numpy", "torch", "cupy", "array_api_strict")
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}.")
    return value.strip().lower()


def _bytes(name: str, value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ConfigError(f"{name} must be a number of bytes (0 or more), got {value!r}.")
    return int(value)


def _fusion_engine(name: str, value: Any) -> str:
    if not isinstance(value, str) or value.strip().lower() not in ("numba", "numpy"):
        raise ConfigError(f"{name} must be 'numba' or 'numpy', got {value!r}.")
    return value.strip().lower()


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
    elif isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise ConfigError(f"{name} must be True or False (or 1/0, true/false), got {value!r}.")


def _always_true(why: str) -> Callable[[str, Any], bool]:
    """A JAX flag that spmd always has on: True is accepted, False is a clear error."""

    def parse(name: str, value: Any) -> bool:
        on = value.strip().lower() in ("1", "true") if isinstance(value, str) else value
        if on is not True and on != 1:
            raise ConfigError(f"{name} cannot be turned off in spmd: {why}.")
        return True

    return parse


@dataclass(frozen=True)
class _Option:
    default: Any
    env: str
    parse: Callable[[str, Any], Any]
    frozen_after: str | None = None  # what, once it happened, makes later updates meaningless
    other_envs: tuple[str, ...] = ()  # read when ``env`` is not set, in this order


_OPTIONS = {
    "num_cpu_devices": _Option(8, "SPMD_NUM_CPU_DEVICES", _positive_int, "devices were created"),
    # the array library devices compute with (spmd/backends/)
    "backend": _Option("numpy", "SPMD_BACKEND", _backend_name, "devices were created"),
    # how long a process waits for its peers in a collective before it names them in an error
    "collective_timeout": _Option(60.0, "SPMD_COLLECTIVE_TIMEOUT", _positive_float),
    # the cores device work is scheduled for (None: those this process may run on)
    "cpu_cores": _Option(None, "SPMD_CPU_CORES", _positive_int_or_none),
    # on: NumPy's dtypes (float64 and int64 defaults); off: JAX's 32-bit ones (spmd/core/dtypes.py)
    "jax_enable_x64": _Option(True, "SPMD_ENABLE_X64", _boolean, other_envs=("JAX_ENABLE_X64",)),
    # jit runs runs of elementwise steps as one fused kernel per device (spmd/core/fused.py)
    "fusion": _Option(True, "SPMD_FUSION", _boolean),
    # the most bytes of large kernel results the buffer pool holds to hand out again (0: off)
    "kept_memory": _Option(256 << 20, "SPMD_KEPT_MEMORY", _bytes),
    # which engine runs a large fused kernel: numba's compiled loop (when installed) or NumPy's
    "fusion_engine": _Option("numba", "SPMD_FUSION_ENGINE", _fusion_engine),
    # JAX flags that JAX code sets, for behaviour spmd always has
    "jax_threefry_partitionable": _Option(
        True,
        "JAX_THREEFRY_PARTITIONABLE",
        _always_true("spmd's random numbers are the same whatever the sharding"),
    ),
}


_ALIASES = {"jax_num_cpu_devices": "num_cpu_devices"}  # JAX's names for spmd's options

# The options a ``with config.overriding(...)`` block may change for the code it runs (its
# thread or task: a context variable), over the process-wide value.
_LOCAL: dict[str, contextvars.ContextVar] = {
    "jax_enable_x64": contextvars.ContextVar("spmd_jax_enable_x64", default=None)
}


class Config:
    """Settings read from the environment and changed with ``update`` before first use.

    Example: ``spmd.config.update("num_cpu_devices", 4)`` before the first ``spmd.devices()``.
    """

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._frozen: set[str] = set()

    def _read(self, name: str) -> Any:
        """The process-wide value of ``name`` (context-local overrides aside)."""
        option = _OPTIONS[name]
        if name not in self._values:
            value = option.default
            for env in (option.env, *option.other_envs):
                raw = os.environ.get(env)
                if raw is not None:
                    value = option.parse(env, raw)
                    break
            self._values[name] = value
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in _OPTIONS:
            raise AttributeError(name)
        local = _LOCAL.get(name)
        value = None if local is None else local.get()
        return self._read(name) if value is None else value

    def reader(self, name: str) -> Callable[[], Any]:
        """A function that returns ``name``'s current value (a block's override first), for
        settings read on every operation: faster than ``config.<name>``."""
        local = _LOCAL.get(name)
        values = self._values

        def read() -> Any:
            value = None if local is None else local.get()
            if value is not None:
                return value
            try:
                return values[name]
            except KeyError:
                return self._read(name)

        return read

    @contextlib.contextmanager
    def overriding(self, name: str, value: Any) -> Iterator[None]:
        """``with config.overriding("jax_enable_x64", False):`` sets ``name`` for the code the
        block runs (this thread or task), and restores it after."""
        name = _ALIASES.get(name, name)
        if name not in _LOCAL:
            local = ", ".join(sorted(_LOCAL))
            raise ConfigError(
                f"config.overriding({name!r}, ...): only {local} can be set for a block; "
                f"use config.update for the others."
            )
        token = _LOCAL[name].set(_OPTIONS[name].parse(name, value))
        try:
            yield
        finally:
            _LOCAL[name].reset(token)

    def update(self, name: str, value: Any) -> None:
        """Set option ``name``; raises ConfigError if the option took effect already."""
        name = _ALIASES.get(name, name)
        if name not in _OPTIONS:
            known = ", ".join(sorted(_OPTIONS))
            raise ConfigError(f"Unknown config option {name!r}. Known options: {known}.")
        option = _OPTIONS[name]
        value = option.parse(name, value)
        if name in self._frozen and value != self._read(name):
            raise ConfigError(
                f"config.update({name!r}, {value!r}) came too late: {option.frozen_after} with "
                f"{name}={self._read(name)}. Call it before the first use of spmd "
                f"(or set {option.env}={value} in the environment)."
            )
        self._values[name] = value

    def _freeze(self, name: str) -> Any:
        """Mark ``name`` as having taken effect and return its value."""
        self._frozen.add(name)
        return self._read(name)


config = Config()
