"""Process-wide settings: their defaults, environment overrides and validated updates."""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
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


_OPTIONS = {
    "num_cpu_devices": _Option(8, "SPMD_NUM_CPU_DEVICES", _positive_int, "devices were created"),
    # the array library devices compute with (spmd/backends/)
    "backend": _Option("numpy", "SPMD_BACKEND", _backend_name, "devices were created"),
    # how long a process waits for its peers in a collective before it names them in an error
    "collective_timeout": _Option(60.0, "SPMD_COLLECTIVE_TIMEOUT", _positive_float),
    # the cores device work is scheduled for (None: those this process may run on)
    "cpu_cores": _Option(None, "SPMD_CPU_CORES", _positive_int_or_none),
    # JAX flags that JAX code sets, for behaviour spmd always has
    "jax_enable_x64": _Option(
        True, "JAX_ENABLE_X64", _always_true("spmd keeps NumPy's dtypes, float64 included")
    ),
    "jax_threefry_partitionable": _Option(
        True,
        "JAX_THREEFRY_PARTITIONABLE",
        _always_true("spmd's random numbers are the same whatever the sharding"),
    ),
}


_ALIASES = {"jax_num_cpu_devices": "num_cpu_devices"}  # JAX's names for spmd's options


class Config:
    """Settings read from the environment and changed with ``update`` before first use.

    Example: ``spmd.config.update("num_cpu_devices", 4)`` before the first ``spmd.devices()``.
    """

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._frozen: set[str] = set()

    def _read(self, name: str) -> Any:
        option = _OPTIONS[name]
        if name not in self._values:
            raw = os.environ.get(option.env)
            value = option.default if raw is None else option.parse(option.env, raw)
            self._values[name] = value
        return self._values[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in _OPTIONS:
            raise AttributeError(name)
        return self._read(name)

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
