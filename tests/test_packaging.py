"""The package as users get it: ``python -m build`` makes a wheel and an sdist, and the wheel,
installed into a fresh virtual environment with its dependencies from the index, runs the
demo. Packaging mistakes (a missing subpackage, a missing data file) fail here."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_demo(tmp_path):
    pytest.importorskip("build")
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--sdist", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("spmd-*.whl")
    (sdist,) = dist.glob("spmd-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    for needed in ("spmd/py.typed", "spmd/experimental/shard_map.py", "spmd/transforms/vmap.py"):
        assert needed in names, f"{needed} is missing from the wheel"
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
               for n in names), "the wheel carries no LICENSE"  # fmt: skip
    with tarfile.open(sdist) as archive:
        in_sdist = archive.getnames()
    assert any(n.endswith("/LICENSE") for n in in_sdist)
    assert any(n.endswith("/spmd/py.typed") for n in in_sdist)

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    demo = subprocess.run(
        [str(python), "-m", "spmd", "demo"],
        cwd=tmp_path,  # away from the checkout, so that only the installed package is found
        env=clean,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr
    assert "CpuDevice(id=7)" in demo.stdout
    located = subprocess.run(
        [str(python), "-c", "import spmd; print(spmd.__file__)"],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(env) in located.stdout  # the installed copy ran, not the checkout
