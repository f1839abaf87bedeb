# mypy: disable-error-code="no-untyped-call"
"""tools/reading_time.py and tools/lessons.py: what a lesson's stated time is computed from, and where it is stated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"


RT, META = load_tool("reading_time"), load_tool("lessons")
LESSONS = META.lessons()


def test_measure__optional_section_then_summary__split_into_core_and_optional(tmp_path: Path) -> None:
    """Words, code lines (imports too, magics not), output lines, figures and Predict prompts land in
    core or optional by heading; the estimate is words/130 + code/5 + output/15 + 1 per figure and prompt."""
    code = new_code_cell("import os\nfrom x import (\n    a,\n)\n%matplotlib inline\nprint(1)\n\nprint(2)")
    code.outputs = [
        new_output("stream", name="stdout", text="one\ntwo\n\n"),
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
    ]
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Title\n\nfour words of prose\n\n> 🔮 **Predict:** how many?"),  # 9 words, 1 prompt
            code,
            new_markdown_cell("## Optional A · deep\n\nextra words here\n\n```\nx = 1\n```"),
            new_code_cell("y = 2"),
            new_markdown_cell("## Summary\n\nback in core"),
        ]
    )
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    core, optional = RT.measure(str(path))
    assert (core.words, core.code_lines, core.output_lines, core.figures, core.predicts) == (12, 6, 2, 1, 1)
    assert (optional.words, optional.code_lines, optional.cells) == (6, 2, 1)
    assert core.minutes() == pytest.approx(12 / 130 + 6 / 5 + 2 / 15 + 1 + 1)
    assert optional.minutes() == pytest.approx(6 / 130 + 2 / 5)


def test_lessons__front_matter__every_lesson_in_course_order() -> None:
    """Each lessons/NN_*.md carries its labkit: block; the orders are 1..N and the notebooks exist."""
    sources = sorted(p.stem for p in (ROOT / "lessons").glob("[0-9][0-9]_*.md"))
    assert [lesson.name for lesson in LESSONS] == sources
    assert [lesson.order for lesson in LESSONS] == list(range(1, len(sources) + 1))
    assert all(lesson.notebook.exists() for lesson in LESSONS)


def test_front_matter__missing_or_wrong_block__says_what_it_needs(tmp_path: Path) -> None:
    """A source without the block, or with a key missing, is refused with the keys it needs."""
    path = tmp_path / "05_x.md"
    path.write_text("---\njupytext: {}\n---\n# x\n")
    with pytest.raises(ValueError, match="needs a 'labkit:' block with exactly"):
        META.read(path)
    path.write_text(
        "---\nlabkit:\n  order: 1\n  title: t\n  minutes: 0\n  optional_minutes: 5\n  local_skips: []\n---\n"
    )
    with pytest.raises(ValueError, match="positive whole numbers"):
        META.read(path)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.name)
def test_lesson__core_path__at_most_45_minutes_and_stated_within_15_percent(lesson: Any) -> None:
    """Each lesson's core path is at most 45 minutes by the estimate; its front matter states it within 15 %
    (the optional sections too), and the first screen says the same minutes."""
    core, optional = RT.measure(str(lesson.notebook))
    minutes, optional_minutes = lesson.minutes, lesson.optional_minutes
    assert core.minutes() <= 45, f"{lesson.name}: the core path takes {core.minutes():.1f} min, more than 45"
    assert abs(core.minutes() - minutes) <= 0.15 * minutes, (
        f"{lesson.name}: core path {core.minutes():.1f} min by the estimate, stated {minutes}"
    )
    assert abs(optional.minutes() - optional_minutes) <= 0.15 * optional_minutes, (
        f"{lesson.name}: optional sections {optional.minutes():.1f} min by the estimate, stated {optional_minutes}"
    )
    first = nbformat.read(lesson.notebook, as_version=4).cells[0].source
    assert RT.stated(str(lesson.notebook)) == minutes
    assert re.search(rf"\*Optional\* sections add about {optional_minutes} minutes", first), first[:600]
