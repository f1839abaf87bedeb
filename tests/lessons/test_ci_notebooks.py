"""The workflow's DynamoDB Local notebook step, run here against a backend that behaves like DynamoDB Local.

`.github/workflows/ci.yml`'s job ``dynamodb-local`` runs every notebook with ``LABKIT_BACKEND=local``
against the DynamoDB Local image: ``pytest --nbval-lax notebooks`` (every cell runs; the checked outputs
must equal the committed ones), then nbconvert keeps the executed lessons as an artifact. This machine
has no Docker, so the stand-in is ``labkit serve --profile dynamodb-local`` in a separate process: the
engine alone — no partition throttle, no fault injector, the ``Labkit.*`` controls answered as unknown
operations, as DynamoDB Local answers them. The step's own script (read from the workflow, with the
job's and the step's environment and GitHub's ``bash -e``) runs in an empty folder, so a recipe that
would fail on a runner fails here first. About two minutes: marked ``slow`` (``python3 bootstrap.py
test --slow``, which CI runs too).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import yaml

from tests.helpers import load_tool
from tests.serving import labkit_serve

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
STEP = "notebooks against DynamoDB Local"


#: What each lesson skips there, and why: its front matter's local_skips (printed by engine_available).
SKIPPED: dict[str, tuple[str, ...]] = {lesson.name: lesson.local_skips for lesson in load_tool("lessons").lessons()}


@pytest.fixture(scope="module")
def like_dynamodb_local() -> Iterator[str]:
    """`labkit serve --profile dynamodb-local`, yielded once its banner is printed (it listens by then)."""
    with labkit_serve("--profile", "dynamodb-local", env=_clean_env()) as served:
        yield served.url


def _clean_env() -> dict[str, str]:
    """This environment without AWS or LABKIT settings: a runner has none."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LABKIT_"))}


def _step(workflow: dict[str, Any]) -> tuple[dict[str, str], str]:
    job = workflow["jobs"]["dynamodb-local"]
    [step] = [s for s in job["steps"] if STEP in s.get("name", "")]
    env = {**{k: str(v) for k, v in job.get("env", {}).items()}, **{k: str(v) for k, v in step["env"].items()}}
    return env, str(step["run"])


@pytest.mark.slow
def test_workflow_notebook_step__against_labkit_serve_dynamodb_local__every_lesson_runs(
    like_dynamodb_local: str, tmp_path: Path
) -> None:
    """The step's script, as GitHub runs it (bash -e, the job's env plus the step's, LABKIT_LOCAL_URL at the
    stand-in): nbval passes on every notebook, and nbconvert executes every lesson; each asserts itself, and
    exactly the cells its front matter lists say they were skipped, with that reason."""
    env, script = _step(yaml.safe_load(WORKFLOW.read_text()))
    assert env["LABKIT_BACKEND"] == "local" and "jupyter nbconvert" in script and "--nbval-lax notebooks" in script
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks", target_is_directory=True)
    (tmp_path / "conftest.py").symlink_to(ROOT / "conftest.py")  # the checkout's: stderr is never compared
    run_env = {
        **_clean_env(),
        **env,
        "LABKIT_LOCAL_URL": like_dynamodb_local,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    # About two minutes idle, a few times that on a loaded machine; 30 minutes only stops a hung notebook.
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert re.search(r"\b\d+ passed\b", done.stdout) and " failed" not in done.stdout, done.stdout[-3000:]
    executed = {p.stem: p for p in (tmp_path / "executed-notebooks").glob("*.ipynb")}
    assert sorted(executed) == sorted(SKIPPED)
    for name, path in executed.items():
        nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
        printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
        assert "on DynamoDB Local at http" in printed, name  # the setup banner (labkit.lab.banner)
        skips = [line for line in printed.splitlines() if line.startswith("skipped on ")]
        prefix = "skipped on DynamoDB Local (LABKIT_BACKEND=local): "
        assert sorted(skips) == sorted(prefix + why for why in SKIPPED[name]), f"{name}: {skips}"
