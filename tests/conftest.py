"""Test settings: reproducible hypothesis runs sized for CI."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "spmd",
    derandomize=True,
    deadline=None,
    max_examples=int(os.environ.get("SPMD_TEST_EXAMPLES", "300")),
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("spmd")
