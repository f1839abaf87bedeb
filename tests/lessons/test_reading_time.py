# mypy: disable-error-code="no-untyped-call"
"""tools/reading_time.py: what a lesson's stated time is computed from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_measure__optional_section_then_summary__split_into_core_and_optional(tmp_path: Path) -> None:
    """Words, code lines (imports skipped) and output lines land in core or optional by heading; the
    estimate is words/100 + code lines/10 + output lines/20 minutes (figures and cells are not timed)."""
    rt = load("reading_time")
    code = new_code_cell("import os\nfrom x import (\n    a,\n)\n%matplotlib inline\nprint(1)\n\nprint(2)")
    code.outputs = [new_output("stream", name="stdout", text="one\ntwo\n")]
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Title\n\nfour words of prose"),  # 5 words (the # is not one)
            code,
            new_markdown_cell("## Optional A · deep\n\nextra words here\n\n```\nx = 1\n```"),
            new_code_cell("y = 2"),
            new_markdown_cell("## Summary\n\nback in core"),
        ]
    )
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    core, optional = rt.measure(str(path))
    assert (core.words, core.code_lines, core.output_lines, core.cells) == (9, 2, 2, 1)
    assert (optional.words, optional.code_lines, optional.cells) == (6, 2, 1)
    assert core.minutes() == 9 / 100 + 2 / 10 + 2 / 20
    assert optional.minutes() == 6 / 100 + 2 / 10


def test_stated__first_cell__core_and_optional_minutes(tmp_path: Path) -> None:
    """What the first screen says: "about **25 minutes**", "the *Optional* sections add about 10 minutes"."""
    rt = load("reading_time")
    path = tmp_path / "lesson.ipynb"
    text = "# T\n\n**Time:** about **25 minutes** for the core path; the *Optional* sections add about 10 minutes."
    nbformat.write(new_notebook(cells=[new_markdown_cell(text)]), path)
    assert rt.stated(str(path)) == (25, 10)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# T\n\nno time")]), path)
    assert rt.stated(str(path)) == (None, None)


LESSONS = sorted((TOOLS.parent / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_lesson__core_path__fits_30_minutes_and_the_stated_time_is_within_20_percent(path: Path) -> None:
    """Each lesson's core path is at most 30 minutes by the estimate, and its first screen states it:
    stated and estimated core (and optional, when stated) times differ by at most 20 %."""
    rt = load("reading_time")
    core, optional = rt.measure(str(path))
    said_core, said_optional = rt.stated(str(path))
    assert said_core is not None, f"{path.name}: the first cell states no 'about **N minutes**'"
    assert core.minutes() <= 30, f"{path.name}: the core path takes {core.minutes():.1f} min, more than 30"
    assert abs(core.minutes() - said_core) <= 0.2 * said_core, (
        f"{path.name}: core path {core.minutes():.1f} min by the estimate, stated {said_core}"
    )
    if said_optional is not None:
        assert abs(optional.minutes() - said_optional) <= max(0.2 * said_optional, 1), (
            f"{path.name}: optional sections {optional.minutes():.1f} min by the estimate, stated {said_optional}"
        )


def test_lessons__all_four_measured() -> None:
    """The parametrised check above covers the four lessons."""
    assert [p.stem for p in LESSONS] == [
        "01_singleton_items",
        "02_uniqueness",
        "03_hot_keys_and_costs",
        "04_faults_and_retries",
    ]
