"""CI recipes: labkit's own workflow and the examples in docs/ci.md, validated and tried.

The GitHub workflows are checked against the GitHub Actions workflow schema that
check-jsonschema ships (``--builtin-schema vendor.github-workflows``, offline). The example race
test in docs/ci.md is run with the plugin, as a team's repository would run it.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import bootstrap
from tests.plugin.teams import run_inner

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
DOC = ROOT / "docs" / "ci.md"


def doc_block(language: str, first_line: str) -> str:
    """The fenced block in docs/ci.md whose first line is ``first_line``."""
    for block in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S):
        if block.splitlines()[0] == first_line:
            return str(block)
    raise AssertionError(f"docs/ci.md has no ```{language} block starting with {first_line!r}")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())  # type: ignore[no-any-return]


def compose_dynamodb_image() -> str:
    return str(yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["dynamodb"]["image"])


def step(job: dict[str, Any], name_part: str) -> dict[str, Any]:
    found = [s for s in job["steps"] if name_part in s.get("name", "")]
    assert len(found) == 1, f"expected one step named like {name_part!r}, found {len(found)}"
    chosen: dict[str, Any] = found[0]
    return chosen


# ---------------------------------------------------------------- schema

BROKEN_WORKFLOW = "on: push\njobs:\n  test:\n    step:\n      - run: echo\n"


@pytest.fixture(scope="module")
def schema_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """check-jsonschema's verdict on each workflow this module checks, by file name: labkit's own, the two
    docs/ci.md shows a team, and a broken one. ONE check-jsonschema run for all four (each start loads the
    schema and jsonschema's format checkers: seconds of CPU); ``-o json`` says which file each error is in."""
    folder = tmp_path_factory.mktemp("workflows")
    files = {"ci.yml": WORKFLOW}
    for name, text in (
        ("races.yml", doc_block("yaml", "# .github/workflows/races.yml")),
        ("races-artifacts.yml", doc_block("yaml", "# .github/workflows/races-artifacts.yml")),
        ("broken.yml", BROKEN_WORKFLOW),
    ):
        files[name] = folder / name
        files[name].write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", "-o", "json"]
        + [str(path) for path in files.values()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    assert report["parse_errors"] == [], out.stdout + out.stderr
    return {
        name: [e["best_match"]["message"] for e in report["errors"] if Path(e["filename"]) == path]
        for name, path in files.items()
    }


def test_workflow__valid_against_the_github_actions_schema(schema_errors: dict[str, list[str]]) -> None:
    """check-jsonschema accepts .github/workflows/ci.yml."""
    assert schema_errors["ci.yml"] == []


def test_workflow__schema_check__rejects_a_broken_workflow(schema_errors: dict[str, list[str]]) -> None:
    """The validation can fail: a job without runs-on (and a misspelt ``steps``) is rejected."""
    assert schema_errors["broken.yml"] == ["'runs-on' is a required property"]


def test_docs_github_example__valid_against_the_github_actions_schema(schema_errors: dict[str, list[str]]) -> None:
    """The workflow a team copies from docs/ci.md is a valid workflow too."""
    assert schema_errors["races.yml"] == []


def test_docs_artifacts_workflow__valid_against_the_github_actions_schema(schema_errors: dict[str, list[str]]) -> None:
    """The workflow docs/ci.md shows for keeping failing races is a valid workflow, uploading on failure."""
    assert schema_errors["races-artifacts.yml"] == []
    text = doc_block("yaml", "# .github/workflows/races-artifacts.yml")
    assert "--labkit-artifacts race-artifacts" in text and "if: failure()" in text


# ---------------------------------------------------------------- structure


def test_workflow__matrix__every_supported_python_runs_the_readme_test_command(workflow: dict[str, Any]) -> None:
    """Python 3.11-3.13 each run the README's test command, then its slow checks (as .ci/run does)."""
    job = workflow["jobs"]["test"]
    assert job["strategy"]["matrix"]["python-version"] == ["3.11", "3.12", "3.13"]
    assert job["strategy"]["fail-fast"] is False
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert runs == ["python3 bootstrap.py test", "python3 bootstrap.py test --slow"]
    readme = (ROOT / "README.md").read_text()
    assert "python3 bootstrap.py test" in readme[: readme.index("---")]
    assert shlex.join(["python", *bootstrap.TEST_COMMAND]) in readme


def test_workflow__dynamodb_local_job__same_image_as_compose(workflow: dict[str, Any]) -> None:
    """The service container is the DynamoDB Local image docker-compose.yml pins."""
    job = workflow["jobs"]["dynamodb-local"]
    assert job["services"]["dynamodb"]["image"] == compose_dynamodb_image()
    assert job["services"]["dynamodb"]["ports"] == ["8000:8000"]
    assert job["env"]["LABKIT_LOCAL_URL"] == "http://localhost:8000"


def test_workflow__dynamodb_local_job__aws_verified_tests_then_notebooks_kept_as_artifacts(
    workflow: dict[str, Any],
) -> None:
    """aws_verified tests with LABKIT_TEST_BACKEND=local; notebooks with LABKIT_BACKEND=local, uploaded."""
    job = workflow["jobs"]["dynamodb-local"]
    verified = step(job, "aws_verified")
    assert verified["env"] == {"LABKIT_TEST_BACKEND": "local"}
    assert verified["run"].split()[:5] == ["python", "-m", "pytest", "-m", "aws_verified"]
    notebooks = step(job, "notebooks against DynamoDB Local")
    assert notebooks["env"] == {"LABKIT_BACKEND": "local"}
    out_dir = re.search(r"--output-dir (\S+) \"\$nb\"", notebooks["run"])
    assert out_dir and "for nb in notebooks/*.ipynb" in notebooks["run"] and "--execute" in notebooks["run"]
    upload = step(job, "keep the executed notebooks")
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "always()"
    assert upload["with"]["path"].rstrip("/") == out_dir.group(1)
    names = [s.get("name", s.get("uses")) for s in job["steps"]]
    assert names.index(verified["name"]) < names.index(notebooks["name"]) < names.index(upload["name"])


def test_workflow__actions__pinned_to_a_major_version(workflow: dict[str, Any]) -> None:
    """Every action names a version (no floating default branch)."""
    for job in workflow["jobs"].values():
        for s in job["steps"]:
            if "uses" in s:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", s["uses"]), s["uses"]


def test_docs_gitlab_example__valid_yaml_with_dynamodb_local_service() -> None:
    """The GitLab CI example parses; both jobs use the compose image as service `dynamodb`, reached by alias."""
    gitlab = yaml.safe_load(doc_block("yaml", "# .gitlab-ci.yml"))
    assert gitlab["stages"] == ["test"]
    for name in ("races", "lessons"):
        job = gitlab[name]
        assert job["services"] == [{"name": compose_dynamodb_image(), "alias": "dynamodb"}]
        assert job["variables"]["LABKIT_LOCAL_URL"] == "http://dynamodb:8000"
        assert all(isinstance(line, str) for line in job["script"])
    assert "--labkit-backend local" in gitlab["races"]["script"][-1]
    assert gitlab["lessons"]["variables"]["LABKIT_BACKEND"] == "local"
    assert gitlab["lessons"]["artifacts"] == {"when": "always", "paths": ["executed-notebooks/"]}


# ---------------------------------------------------------------- the documented race test


def test_docs_example_race_test__passes_add_and_shows_the_lost_update(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example in docs/ci.md runs as written: ADD passes, read-modify-write fails (xfail), local skipped."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for var in ("LABKIT_BACKEND", "LABKIT_ENDPOINT_URL", "LABKIT_TEST_BACKEND"):
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        monkeypatch.setenv("LABKIT_LOCAL_URL", f"http://127.0.0.1:{s.getsockname()[1]}")  # nothing listens
    pytester.makepyfile(test_points_races=doc_block("python", "# tests/test_points_races.py"))
    result = run_inner(pytester, "-rsx")
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["*XFAIL*read-modify-write loses awards*"])
