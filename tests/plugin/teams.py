"""Running a team's pytest, as a team runs it: a clean CI runner's environment, an empty folder, the plugin
from its entry point; and reading what the run reported. Imported by the plugin's test files (fixtures
live in conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest

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


def run_pytest_in(folder: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A plain ``python -m pytest ARGS`` in ``folder``, in a clean runner's environment (plus ``env``)."""
    home = folder.parent / "home"
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *DEV_ONLY_PLUGINS_OFF, *args],
        cwd=folder,
        env={**clean_runner_env(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def run_inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The inner pytest, in process, with the labkit plugin and no cache."""
    return pytester.runpytest("-p", "labkit.pytest_plugin", "-p", "no:cacheprovider", *args)


DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def doc_block(first_line: str) -> str:
    """The ```python block of docs/ci.md whose first line is ``first_line``."""
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S):
        if block.startswith(first_line + "\n"):
            return str(block)
    raise AssertionError(f"docs/ci.md has no python block starting with {first_line!r}")


def failure_sections(out: str) -> dict[str, str]:
    """pytest's report of each failed test, by test id (the ``____ test_id ____`` headers).

    Counted per test, not per printed line: with ``CI`` set (as on every CI runner) pytest stops
    truncating assertion explanations and prints a failure's message a second time.
    """
    parts = re.split(r"^_+ (\S+) _+$", out.split("= short test summary info =")[0], flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@dataclass(frozen=True)
class Session:
    """One pytest run of a team's folder: each test's outcome (from its JUnit XML: by its module's dotted
    name and the test's name), each failure's report (by test id) and everything it printed."""

    outcomes: dict[tuple[str, str], str]
    failures: dict[str, str]
    log: str

    def of(self, module: str) -> dict[str, str]:
        """The outcomes of one test module's tests, by test name; ``module`` as JUnit names it (dotted
        from the folder pytest ran in: ``test_moto``, ``tests.test_cart_races``)."""
        return {test: outcome for (where, test), outcome in self.outcomes.items() if where == module}


def run_team(folder: Path, *args: str, env: Mapping[str, str] | None = None) -> Session:
    """ONE plain pytest in ``folder`` (:func:`run_pytest_in`: a clean runner's environment). Several
    scenarios share a run where their modules share no state: each pytest start costs seconds of imports."""
    report = folder.parent / f"{folder.name}-report.xml"
    done = run_pytest_in(folder, *args, f"--junitxml={report}", env=env)
    outcomes: dict[tuple[str, str], str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcomes[(str(case.get("classname")), str(case.get("name")))] = (
            "failed" if failed else "skipped" if skipped else "passed"
        )
    return Session(outcomes, failure_sections(done.stdout), done.stdout + done.stderr)
