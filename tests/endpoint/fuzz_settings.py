"""The fuzz tests' hypothesis settings: the ``labkit-ci`` profile, registered on import."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: The fuzz tests' example count: 100 in the README's loop; the workflow's nightly job runs 2,000
#: (LABKIT_FUZZ_EXAMPLES=2000; 5000 for a deeper local run).
FUZZ_EXAMPLES = int(os.environ.get("LABKIT_FUZZ_EXAMPLES", 100))
settings.register_profile(
    "labkit-ci",
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: The fuzz tests' hypothesis settings: a fixed example count, derandomized (a CI failure replays locally).
FUZZ = settings.get_profile("labkit-ci")
