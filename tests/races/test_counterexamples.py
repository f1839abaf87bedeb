"""A found failure, made small and kept: shrinking, the replay file, listeners and CI artifacts.

Shrinking re-runs candidates with fewer context switches (and without a fault it does not need)
within a budget of its own; the original counterexample stays in ``result.original``; a budget
that runs out keeps the unshrunk one and says so. ``result.save(path)`` writes a replay file
that ``labkit.races.load(path)`` reads back; a file from another labkit, or for other actors, is
one clear error naming the difference. ``write_artifacts`` writes the JSON and the timeline.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import labkit.races.replay as replay_module
from labkit.lab.artifacts import artifact_stem, write_artifacts
from labkit.races import Exploration, ExploreConfig, Interleaving, add_listener, explore, load, remove_listener
from labkit.races.calls import Trace
from labkit.races.shrink import candidates, shrink, switches
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError
from tests.races.increments import naive_increment, put_counter, read_counter


def lost_update(conn: Connection, **kwargs: Any) -> tuple[dict[str, Callable[[Any], int]], Exploration]:
    """The lesson-sized race: two read-modify-write increments (GetItem, PutItem n+1)."""
    actors = {name: naive_increment(conn.table_name) for name in "AB"}

    def both(res: Interleaving) -> None:
        assert read_counter(conn) == 2, f"the counter is {read_counter(conn)}: an increment was lost"

    return actors, explore(actors, conn=conn, setup=lambda: put_counter(conn), invariant=both, **kwargs)


# ---------------------------------------------------------------- shrinking


def test_shrink__lesson_sized_race__a_reads_b_reads_b_writes_a_writes(tconn: Connection) -> None:
    """Found as 'A B A B' (3 switches), shrunk to 'A B B A' (2): both read before either writes."""
    actors, result = lost_update(tconn)
    assert not result.passed
    assert result.original == "A B A B"
    assert result.counterexample == "A B B A"
    assert result.shrink is not None and result.shrink.startswith("shrunk from 3 to 2 context switches in ")
    assert f"of a shrinking budget of {ExploreConfig().shrink_budget}" in result.shrink
    assert result.shrink in result.summary()
    assert result.interleaving is not None and " ".join(result.interleaving.turns) == "A B B A"


def test_shrink__budget_runs_out__the_unshrunk_counterexample_is_kept_and_said(tconn: Connection) -> None:
    _, result = lost_update(tconn, config=ExploreConfig(shrink_budget=1))
    assert result.counterexample == result.original == "A B A B"
    assert result.shrink_runs == 1
    assert result.shrink == (
        "not shrunk: the shrinking budget of 1 runs ran out before shrinking was done; the "
        "counterexample is the one the search found (3 context switches)"
    )


def test_shrink__zero_budget__not_shrunk(tconn: Connection) -> None:
    _, result = lost_update(tconn, config=ExploreConfig(shrink_budget=0))
    assert result.counterexample == result.original and result.shrink == "not shrunk: shrink_budget=0"


class Scripted:
    """A runner for shrink(): a candidate fails when ``fails(order, faults)`` says so; it runs as given."""

    def __init__(self, fails: Callable[[tuple[str, ...], tuple[str, ...]], bool]) -> None:
        self.fails = fails
        self.tried: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def attempt(self, order: Sequence[str], faults: tuple[str, ...]) -> tuple[Interleaving, Trace, str | None]:
        self.tried.append((tuple(order), faults))
        res = Interleaving(tuple(order), {}, {}, turns=tuple(order))
        trace = Trace([], [], tuple(order))
        return res, trace, "fails" if self.fails(tuple(order), faults) else None


def test_shrink__a_fault_the_failure_does_not_need__is_dropped() -> None:
    res = Interleaving(("A", "B"), {}, {})
    runner = Scripted(lambda order, faults: True)  # fails whatever: the fault is not needed
    found = shrink(runner, ("A", "B"), ("A1: lose-response",), res, "fails", 10)
    assert found.faults == () and found.faults_dropped
    assert found.statement().startswith("shrunk without the fault it did not need in 1 run(s)")


def test_shrink__candidates__fewest_switches_first_then_by_name() -> None:
    assert list(candidates(("A", "B", "A", "B"))) == [("A", "A", "B", "B"), ("A", "B", "B", "A"), ("B", "A", "A", "B")]
    assert switches(("A.1", "A.2", "B", "B")) == 2
    runner = Scripted(lambda order, faults: switches(order) >= 2)
    found = shrink(runner, ("A", "B", "A", "B"), (), Interleaving((), {}, {}), "fails", 10)
    assert found.order == ("A", "B", "B", "A") and found.done


# ---------------------------------------------------------------- the replay file


def test_save_and_load__the_counterexample_replays_from_the_file(tconn: Connection, tmp_path: Path) -> None:
    actors, result = lost_update(tconn)
    path = result.save(tmp_path / "race.json")
    data = json.loads(path.read_text())
    assert data["order"] == result.counterexample and data["original"] == result.original
    assert data["actors"] == ["A", "B"] and data["strategy"] == result.strategy and data["faults"] == []
    replay = load(path)
    assert (replay.order, replay.faults, replay.actors) == (result.counterexample, (), ("A", "B"))
    res = replay.run(actors, conn=tconn, setup=lambda: put_counter(tconn))
    assert " ".join(res.turns) == result.counterexample and read_counter(tconn) == 1


def test_load__another_labkit_version__one_error_naming_both(tconn: Connection, tmp_path: Path) -> None:
    _, result = lost_update(tconn)
    path = result.save(tmp_path / "race.json")
    data = json.loads(path.read_text())
    data["labkit"] = "0.0.1"
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match=r"was written by labkit 0\.0\.1, this is labkit \d"):
        load(path)


def test_load__other_actors__one_error_naming_the_difference(tconn: Connection, tmp_path: Path) -> None:
    actors, result = lost_update(tconn)
    path = result.save(tmp_path / "race.json")
    with pytest.raises(ValidationError, match=r"the file's 'B' are not among them; 'C' are not in the file"):
        load(path, actors=["A", "C"])
    with pytest.raises(ValidationError, match="written for actors"):
        load(path).run({"A": actors["A"], "C": actors["B"]}, conn=tconn)


@pytest.mark.parametrize(
    ("content", "message"), [("{", "cannot read the replay file"), ("[]", "is not a labkit replay file")]
)
def test_load__not_a_replay_file__says_how_to_write_one(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ValidationError, match=message):
        load(path)


def test_save__a_passing_exploration__nothing_to_save(tconn: Connection, tmp_path: Path) -> None:
    passed = Exploration(True, None, 1, "g", "dpor", 1, {"A": 1})
    with pytest.raises(ValidationError, match="there is no counterexample to save"):
        passed.save(tmp_path / "x.json")


# ---------------------------------------------------------------- listeners and artifacts


def test_listeners__told_every_finished_exploration__until_removed(tconn: Connection) -> None:
    told: list[Exploration] = []
    add_listener(told.append)
    try:
        _, result = lost_update(tconn)
    finally:
        remove_listener(told.append)
    assert told == [result]
    lost_update(tconn)
    assert told == [result]


def test_write_artifacts__json_and_timeline(tconn: Connection, tmp_path: Path) -> None:
    _, result = lost_update(tconn)
    paths = write_artifacts(result, tmp_path / "out", "tests/test_x.py::test_cart[rmw]")
    assert [p.name for p in paths] == [
        "tests_test_x.py_test_cart_rmw.race.json",
        "tests_test_x.py_test_cart_rmw.timeline.png",
    ]
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(paths[0].read_text())
    assert data["timeline"] == paths[1].name
    assert load(paths[0]).order == result.counterexample


def test_write_artifacts__without_matplotlib__the_json_says_why(
    tconn: Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, result = lost_update(tconn)
    monkeypatch.setitem(sys.modules, "labkit.lab.plots", None)  # import labkit.lab.plots raises ImportError
    paths = write_artifacts(result, tmp_path, "race")
    assert [p.name for p in paths] == ["race.race.json"]
    assert "install matplotlib" in json.loads(paths[0].read_text())["timeline"]
    assert not (tmp_path / "race.timeline.png").exists()


def test_artifact_stem__test_ids_become_file_names() -> None:
    assert artifact_stem("tests/a.py::test_b[x y]") == "tests_a.py_test_b_x_y"
    assert artifact_stem("///") == "explore"
    assert replay_module.FORMAT == 1
