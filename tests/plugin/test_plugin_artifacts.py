"""``--labkit-artifacts DIR``: a failing test whose exploration failed leaves its race files there.

The writer is the views layer's and the listeners the race lab's (:mod:`labkit.lab.artifacts`: ``add_listener``,
``remove_listener``, ``write_artifacts(result, directory, stem) -> list[Path]``). The in-process
tests hand the plugin a small stand-in with the same interface (a test's own conftest.py puts it in
``sys.modules``) and finish "explorations" through it; the last test runs a real failing
``explore`` from an empty folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labkit.pytest_plugin.artifacts import ARTIFACTS_MODULE
from tests.helpers import TEAM_POINTS
from tests.plugin.teams import run_inner, run_pytest_in

pytest_plugins = ["pytester"]

#: The stand-in: the interface the race lab provides, writing what its files would hold in miniature.
STAND_IN = f"""
import json, sys, types
from pathlib import Path

listeners = []


def add_listener(fn):
    listeners.append(fn)


def remove_listener(fn):
    listeners.remove(fn)


def write_artifacts(result, directory, stem):
    race = Path(directory) / f"{{stem}}.race.json"
    race.write_text(json.dumps({{"order": result.order, "passed": result.passed}}))
    picture = Path(directory) / f"{{stem}}.timeline.png"
    picture.write_bytes(b"\\x89PNG stand-in")
    return [race, picture]


class Exploration:
    def __init__(self, passed, order):
        self.passed, self.order = passed, order


def finish(passed, order="A B A B"):
    for fn in list(listeners):
        fn(Exploration(passed, order))


module = types.ModuleType({ARTIFACTS_MODULE!r})
module.__dict__.update(add_listener=add_listener, remove_listener=remove_listener,
                       write_artifacts=write_artifacts, finish=finish, listeners=listeners)
sys.modules[{ARTIFACTS_MODULE!r}] = module
"""

TEAM = f"""
import sys
import pytest

artifacts = sys.modules[{ARTIFACTS_MODULE!r}]


@pytest.mark.parametrize("case", ["one", "two"])
def test_race_lost(case):
    artifacts.finish(passed=False, order="A B B A")
    if case == "two":
        artifacts.finish(passed=True)
        artifacts.finish(passed=False, order="B A A B")
    assert False, "FAILED after 3 run(s)"


def test_race_found_but_test_passes():
    artifacts.finish(passed=False)


def test_fails_without_a_failing_race():
    artifacts.finish(passed=True)
    assert False


@pytest.mark.xfail(strict=True)
def test_expected_to_lose():
    artifacts.finish(passed=False)
    assert False


def test_listener_removed_at_the_end():
    assert len(artifacts.listeners) == 1
"""


@pytest.fixture
def inner(inner: pytest.Pytester) -> pytest.Pytester:
    """The plugin's inner pytest (tests/plugin/teams.py), with the stand-in race lab as its conftest."""
    inner.makeconftest(STAND_IN)
    return inner


def test_artifacts__failing_test_with_a_failing_exploration__files_named_after_the_test(
    inner: pytest.Pytester,
) -> None:
    """Each failing exploration of a failing test is written, named after the test id; nothing for a passing
    test, a failure without a failing race, or an expected failure; the report names the files."""
    inner.makepyfile(test_team=TEAM)
    out = inner.path / "race-artifacts"
    result = run_inner(inner, "--labkit-artifacts", str(out))
    result.assert_outcomes(passed=2, failed=3, xfailed=1)
    assert sorted(p.name for p in out.iterdir()) == [
        "test_team.py_test_race_lost_one.race.json",
        "test_team.py_test_race_lost_one.timeline.png",
        "test_team.py_test_race_lost_two-2.race.json",
        "test_team.py_test_race_lost_two-2.timeline.png",
        "test_team.py_test_race_lost_two.race.json",
        "test_team.py_test_race_lost_two.timeline.png",
    ]
    assert json.loads((out / "test_team.py_test_race_lost_two-2.race.json").read_text()) == {
        "order": "B A A B",
        "passed": False,
    }
    result.stdout.fnmatch_lines(["*- labkit artifacts -*", f"{out}/test_team.py_test_race_lost_one.race.json"])


def test_artifacts__option_absent__nothing_listens_and_nothing_written(inner: pytest.Pytester) -> None:
    """Without the option the plugin registers no listener (and imports no race lab for it)."""
    inner.makepyfile(
        test_team=f"""
        import sys
        def test_no_listener():
            assert sys.modules[{ARTIFACTS_MODULE!r}].listeners == []
        """
    )
    run_inner(inner).assert_outcomes(passed=1)


def test_artifacts__a_file_not_a_folder__usage_error(inner: pytest.Pytester) -> None:
    """--labkit-artifacts naming a file stops pytest at startup, saying so."""
    inner.makepyfile(test_x="def test_x():\n    pass\n")
    (inner.path / "notes.txt").write_text("mine")
    result = run_inner(inner, "--labkit-artifacts", "notes.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--labkit-artifacts: notes.txt is a file, not a folder; name a folder*"])
    assert (inner.path / "notes.txt").read_text() == "mine"


def test_artifacts__race_lab_without_the_writer__usage_error_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A labkit whose race lab has no artifacts module says so at startup instead of failing every test."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(f"import sys\nsys.modules[{ARTIFACTS_MODULE!r}] = None  # an import of it fails\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = run_inner(pytester, "--labkit-artifacts", "out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--labkit-artifacts needs {ARTIFACTS_MODULE}, which this labkit cannot import*"])
    assert not (pytester.path / "out").exists()


def test_artifacts__real_explore__a_failing_race_test_leaves_its_json_and_timeline(tmp_path: Path) -> None:
    """From an empty folder: a read-modify-write race test fails and leaves <test id>.race.json and
    <test id>.timeline.png in the folder named by --labkit-artifacts; its passing twin leaves nothing."""
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "test_points.py").write_text(
        "import pytest\n"
        + TEAM_POINTS
        + """

@pytest.mark.parametrize("add", [add_points_read_modify_write, add_points_atomic])
def test_points(labkit_conn, add):
    t = labkit_conn.table_name

    def setup():
        labkit_conn.client.put_item(TableName=t, Item={**KEY, "balance": {"N": "0"}})

    def both(res):
        n = labkit_conn.client.get_item(TableName=t, Key=KEY, ConsistentRead=True)["Item"]["balance"]["N"]
        assert n == "3", f"balance is {n}"

    result = explore({"A": lambda c: add(c, t, 1), "B": lambda c: add(c, t, 2)},
                     conn=labkit_conn, setup=setup, invariant=both)
    assert result.passed, result.summary()
"""
    )
    done = run_pytest_in(folder, "-q", "--labkit-artifacts", "artifacts")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    stem = "test_points.py_test_points_add_points_read_modify_write"
    assert sorted(p.name for p in (folder / "artifacts").iterdir()) == [f"{stem}.race.json", f"{stem}.timeline.png"]
    assert json.loads((folder / "artifacts" / f"{stem}.race.json").read_text())
    assert (folder / "artifacts" / f"{stem}.timeline.png").read_bytes().startswith(b"\x89PNG")
    assert re.search(rf"labkit artifacts.*\n.*{stem}\.race\.json", done.stdout)
