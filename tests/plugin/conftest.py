"""The plugin tests' fixture (``inner``: a pytester that inherits no backend), and the heavy modules
imported once. The helpers that run a team's pytest are in tests/plugin/teams.py.

pytester's in-process runs (``pytester.runpytest``) drop every module first imported inside a run
when it ends, and numpy cannot be imported twice in one process. The plugin is inert until a test
uses labkit, so the race lab (pandas, numpy), botocore and the engine are imported here, before
any inner run imports them.
"""

from __future__ import annotations

import pytest

import labkit.embedded  # noqa: F401
import labkit.races  # noqa: F401
import labkit.shared.routing  # noqa: F401
from labkit.pytest_plugin.options import ENV_ROUTED

#: What an inner pytest must not inherit from this session: labkit's backend choice and any endpoint routing.
INHERITED = ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_TEST_BACKEND", "AWS_ENDPOINT_URL", ENV_ROUTED)


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose inner pytest loads only the labkit plugin (and what the test names), inherits no
    backend or endpoint variable, and makes no credential lookup off loopback (see teams.clean_runner_env)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in (*INHERITED, "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(var, raising=False)
    return pytester
