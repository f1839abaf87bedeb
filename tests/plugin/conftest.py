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

import labkit.embedded  # noqa: F401
import labkit.races  # noqa: F401
import labkit.routing  # noqa: F401

SCRUBBED = ("AWS_", "LABKIT_", "PYTEST_", "BOTO_")
#: labkit's dev venv has nbval, which a team's venv does not: importing it imports jsonschema's format
#: checkers (rfc3987_syntax builds a grammar at import), 3-5 s per pytest process on this machine.
DEV_ONLY_PLUGINS_OFF = ("-p", "no:nbval")


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
