"""Devices and configuration: the default 8 virtual devices, and how to change their number."""

import os
import subprocess
import sys

import pytest

import spmd


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_eight_virtual_cpu_devices_by_default():
    devices = spmd.devices()
    assert [d.id for d in devices] == list(range(8))
    assert repr(devices[3]) == "CpuDevice(id=3)" and devices[3].platform == "cpu"
    assert spmd.device_count() == spmd.local_device_count() == 8
    assert spmd.local_devices() == devices and spmd.devices("cpu") == devices
    assert (spmd.process_index(), spmd.process_count()) == (0, 1)
    assert {devices[0], spmd.devices()[0]} == {devices[0]}


def test_environment_variable_sets_the_device_count():
    result = run_python("import spmd; print(spmd.device_count())", SPMD_NUM_CPU_DEVICES="3")
    assert result.stdout.strip() == "3", result.stderr


def test_config_update_before_first_use_sets_the_device_count():
    code = "import spmd; spmd.config.update('num_cpu_devices', 5); print(len(spmd.devices()))"
    assert run_python(code).stdout.strip() == "5"


def test_config_update_after_first_use_is_an_error():
    spmd.devices()
    with pytest.raises(spmd.ConfigError, match=r"too late.*num_cpu_devices=8"):
        spmd.config.update("num_cpu_devices", 4)
    spmd.config.update("num_cpu_devices", 8)  # no change, no error


def test_bad_config_values_are_errors():
    with pytest.raises(spmd.ConfigError, match=r"Unknown config option 'num_gpus'"):
        spmd.config.update("num_gpus", 2)
    with pytest.raises(spmd.ConfigError, match="positive integer, got 0"):
        spmd.config.update("num_cpu_devices", 0)
    result = run_python("import spmd; spmd.devices()", SPMD_NUM_CPU_DEVICES="eight")
    assert "SPMD_NUM_CPU_DEVICES must be a positive integer, got 'eight'" in result.stderr
