"""``labkit exercises``: every reference solution checked on this machine; exit 0 when all pass."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import labkit.lab.exercises.cli as cli
from labkit.commands.cli import main
from labkit.lab.exercises import solutions

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("LABKIT_BACKEND", None)
    return subprocess.run(
        [sys.executable, "-m", "labkit", "exercises", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_labkit_exercises__all_reference_solutions_pass__prints_a_row_each_and_exits_0() -> None:
    """The real command, in a fresh process: one PASSED row per exercise, the ready line, exit 0.

    In the slow checks (it checks all three exercises again, about 6 s of CPU): in the fast loop the
    command's main runs every check in-process (test_labkit_exercises__a_reference_fails__...), and nbval
    runs each solution notebook's check."""
    done = _run()
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "labkit exercises: checking the reference solutions on backend embedded"
    rows = {line.split()[0]: line.split()[1] for line in lines[2:5]}
    assert rows == {"raise-limit": "PASSED", "unique-sign-up": "PASSED", "change-email": "PASSED"}
    assert lines[-1] == "all 3 exercises pass: this machine is ready for the workshop"


def test_labkit_exercises__unknown_backend__one_line_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A backend that does not exist is one clear error and exit code 2, not a traceback."""
    assert main(["exercises", "--backend", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit: error: --backend: unknown labkit backend 'nosuch'; choose one of: embedded")
    assert "Traceback" not in err and err.count("\n") == 1


def test_labkit_exercises__a_reference_fails__names_it_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When a check fails on this machine, the row says FAILED with its finding, and exit is 1."""

    def broken(client: object, table_name: str, by: int) -> None:
        raise RuntimeError("broken on this laptop")

    monkeypatch.setitem(solutions.REFERENCE, "raise-limit", broken)
    assert cli.run(argparse.Namespace(backend="embedded")) == cli.EXIT_FAILED
    out, err = capsys.readouterr()
    assert "raise-limit      FAILED" in out
    assert "raised RuntimeError: broken on this laptop" in out
    rows = dict(re.findall(r"^([a-z-]+) +(PASSED|FAILED) ", out, flags=re.M))
    assert rows == {"raise-limit": "FAILED", "unique-sign-up": "PASSED", "change-email": "PASSED"}  # really checked
    assert err.startswith("1 of 3 exercises FAILED on this machine (raise-limit)")


def test_labkit_parser__has_the_exercises_subcommand() -> None:
    """`labkit exercises --help` is wired into the labkit command."""
    with pytest.raises(SystemExit) as stop:
        main(["exercises", "--help"])
    assert stop.value.code == 0
