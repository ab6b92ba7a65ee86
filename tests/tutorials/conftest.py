"""Each tutorial test starts as a fresh notebook would: no mesh set, plain (uncoloured) output."""

import pytest

import spmd


@pytest.fixture(autouse=True)
def fresh_notebook(monkeypatch):
    """Let rich see a captured stdout that is no terminal, as in CI; undo ``set_mesh(mesh)``
    used as a setter."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    yield
    spmd.set_mesh(None)
