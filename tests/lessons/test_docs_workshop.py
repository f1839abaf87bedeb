"""docs/workshop.md says what the lessons' front matter says: titles, stated minutes, agendas that fit them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = (ROOT / "docs" / "workshop.md").read_text(encoding="utf-8")


LESSONS = {lesson.name[:2]: lesson for lesson in load_tool("lessons").lessons()}


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_workshop_table__each_lesson__its_title_and_stated_minutes(number: str) -> None:
    """The notebook table's row for a lesson carries its front matter's title and minutes."""
    lesson = LESSONS[number]
    [row] = [line for line in WORKSHOP.splitlines() if f"`notebooks/{lesson.name}.ipynb`" in line]
    assert f"lesson: {lesson.title} |" in row, row
    assert f"~{lesson.minutes} min (+{lesson.optional_minutes} optional)" in row, row


def test_workshop__every_lesson_time_it_names__is_the_front_matters() -> None:
    """Wherever the page gives a lesson's time ("Lesson 01's core path (45 min)", "Lessons 03 (45 min)"),
    it is that lesson's stated core minutes."""
    named = re.findall(r"(?:Lessons? |and )(\d\d)(?:'s core path)? \((\d+) min\)", WORKSHOP)
    assert len(named) >= 4, named
    for number, minutes in named:
        assert int(minutes) == LESSONS[number].minutes, f"lesson {number}: {minutes} min on the page"


def test_workshop_agendas__each_timed_slot_fits_before_the_next() -> None:
    """In both agendas, a row that says how long its activity takes ("(45 min)") leaves that much time
    before the next row starts."""
    rows = re.findall(r"^\| (\d+):(\d\d) \| (.*)$", WORKSHOP, re.M)
    assert len(rows) >= 12
    starts = [int(h) * 60 + int(m) for h, m, _ in rows]
    checked = 0
    for (_, _, what), start, following in zip(rows, starts, starts[1:], strict=False):
        timed = re.search(r"\((\d+) min\)", what)
        if timed and following > start:  # the next row of the same agenda
            assert following - start >= int(timed[1]), f"{what!r} needs {timed[1]} min, has {following - start}"
            checked += 1
    assert checked >= 6
