"""Test settings: reproducible hypothesis runs sized for CI; every Program a trace finishes
is typechecked."""

import os

import pytest
from hypothesis import HealthCheck, settings

from spmd.core.trace import PROGRAM_CHECKS
from spmd.core.typecheck import typecheck

settings.register_profile(
    "spmd",
    derandomize=True,
    deadline=None,
    max_examples=int(os.environ.get("SPMD_TEST_EXAMPLES", "300")),
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("spmd")


@pytest.fixture(autouse=True, scope="session")
def _typecheck_programs():
    """Run spmd.core.typecheck on every Program a trace finishes (jit, grad and kin, vmap
    inside them, shard_map and pmap bodies and their derivatives, shard_tasks)."""
    PROGRAM_CHECKS.append(typecheck)
    yield
    PROGRAM_CHECKS.remove(typecheck)
