"""tools/loop_order.py: the order the test loop's xdist workers get their files in (decision 135).

Longest first changes only the order: every test runs once, each file's tests together, in their order."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import load_tool

loop_order = load_tool("loop_order")

NODEIDS = [
    "tests/a.py::test_1",
    "tests/a.py::test_2",
    "tests/b.py::test_only",
    "tests/c.py::Group::test_x",
    "tests/c.py::Group::test_y",
    "notebooks/01.ipynb::Cell 0",
    "notebooks/01.ipynb::Cell 1",
    "tests/new.py::test_1",
]


def test_longest_first__recorded_seconds__files_by_seconds_each_kept_whole_and_in_order() -> None:
    seconds = {"tests/a.py": 1.0, "tests/b.py": 9.5, "tests/c.py::Group": 0.2, "notebooks/01.ipynb": 14.0}
    order = [NODEIDS[i] for i in loop_order.longest_first(NODEIDS, seconds)]
    assert order == [
        "notebooks/01.ipynb::Cell 0",
        "notebooks/01.ipynb::Cell 1",
        "tests/b.py::test_only",
        "tests/new.py::test_1",  # unrecorded: the median seconds per test (3.75 s) x its 1 test
        "tests/a.py::test_1",
        "tests/a.py::test_2",
        "tests/c.py::Group::test_x",
        "tests/c.py::Group::test_y",
    ]
    assert sorted(order) == sorted(NODEIDS)


def test_longest_first__no_record__collection_order() -> None:
    assert loop_order.longest_first(NODEIDS, {}) == list(range(len(NODEIDS)))


def test_record__phases_summed_per_scope__load_reads_them_back(tmp_path: Path) -> None:
    path = tmp_path / "seconds.json"
    loop_order.record([("tests/a.py::test_1", 0.5), ("tests/a.py::test_1", 0.25), ("tests/c.py::G::t", 2.0)], path)
    assert json.loads(path.read_text()) == {"tests/c.py::G": 2.0, "tests/a.py": 0.75}
    assert loop_order.load(path) == {"tests/c.py::G": 2.0, "tests/a.py": 0.75}
    assert loop_order.load(tmp_path / "missing.json") == {}


def test_committed_record__names_the_loop_files_that_exist() -> None:
    """The record is of this repository's loop: every scope it names is a file here (or a class in one)."""
    root = Path(loop_order.RECORD).parents[1]
    scopes = loop_order.load()
    assert len(scopes) > 100
    missing = [s for s in scopes if not (root / s.split("::")[0]).is_file()]
    assert not missing, f"stale entries in {loop_order.RECORD.name}; refresh it (tools/loop_order.py): {missing}"


def test_loop_process__collector_thresholds_raised_and_the_collected_heap_frozen() -> None:
    """Decision 232: the root conftest.py sets the loop's collector, and freezes what collection loaded."""
    import gc

    assert gc.get_threshold() == loop_order.GC_THRESHOLDS
    assert gc.get_freeze_count() > 10_000  # the modules and items collection loaded, at least
