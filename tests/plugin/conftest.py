"""Shared by the plugin tests: a clean CI runner's pytest, and the heavy modules imported once.

pytester's in-process runs (``pytester.runpytest``) drop every module first imported inside a run
when it ends, and numpy cannot be imported twice in one process. The plugin is inert until a test
uses labkit, so the race lab (pandas, numpy), botocore and the engine are imported here, before
any inner run imports them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import labkit.embedded  # noqa: F401
import labkit.races  # noqa: F401
import labkit.routing  # noqa: F401
from labkit.pytest_plugin import ENV_ROUTED

SCRUBBED = ("AWS_", "LABKIT_", "PYTEST_", "BOTO_")
#: labkit's dev venv has pytest plugins a team's venv does not (the dev extras: nbval for the lessons,
#: hypothesis for the property tests, anyio from JupyterLab). Each is loaded at every pytest start: nbval
#: imports jsonschema's format checkers (rfc3987_syntax builds a grammar at import), hypothesis's plugin
#: imports hypothesis. Measured on this machine: a one-test pytest process 1.5 s of CPU with them, 0.3 s
#: without. A team's inner pytest is run as a team's venv would run it: without them.
DEV_ONLY_PLUGINS_OFF = ("-p", "no:nbval", "-p", "no:hypothesispytest", "-p", "no:anyio")


def clean_runner_env(home: Path) -> dict[str, str]:
    """The environment of a clean CI runner: no AWS, labkit or pytest variables, an empty HOME, and
    ``CI=true`` as every hosted runner sets it (pytest then prints untruncated explanations).

    One AWS variable is set, and it configures nothing a test relies on: AWS_EC2_METADATA_DISABLED.
    A client created with no credentials anywhere makes botocore ask the EC2 instance metadata
    service (169.254.169.254) last; this machine sends nothing off loopback.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED)}
    env["HOME"] = str(home)
    env["CI"] = "true"
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


def run_pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = folder.parent / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *DEV_ONLY_PLUGINS_OFF, *args],
        cwd=folder,
        env=clean_runner_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


#: What an inner pytest must not inherit from this session: labkit's backend choice and any endpoint routing.
INHERITED = ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_TEST_BACKEND", "AWS_ENDPOINT_URL", ENV_ROUTED)


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose inner pytest loads only the labkit plugin (and what the test names), inherits no
    backend or endpoint variable, and makes no credential lookup off loopback (see clean_runner_env)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in (*INHERITED, "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(var, raising=False)
    return pytester


def run_inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner pytest, in process, with the labkit plugin and no cache."""
    return pytester.runpytest("-p", "labkit.pytest_plugin", "-p", "no:cacheprovider", *args)
