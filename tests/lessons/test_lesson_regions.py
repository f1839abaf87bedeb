"""Lessons 01 (Optional I) and 02 (Optional J): the cross-region loss forced and asserted, then the fixes holding.

Each section runs here as the notebook runs it, after the lesson's earlier cells: the names those define
and the section uses (the recipes the lesson shows: ``update``, ``RetriesExhausted``,
``register_request``) are given from ``recipes/``. Three checks per section:

* on the embedded endpoint it runs: the loss is found by explore, the home Region and MRSC hold (slow:
  the README's test command runs the same cells and asserts in the notebooks);
* a mutation test: with the engine's replication made synchronous (``set_replication_lag(conn, 0)``: every
  request first finds earlier writes delivered) the section's assertion of the loss fails — it asserts
  something replication's lag causes, not something it would print anyway;
* on the ``dynamodb-local`` profile (no global tables, as DynamoDB Local) every cell skips, printing why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import recipes.guarded_update
import recipes.uniqueness
from labkit.embedded import DYNAMODB_LOCAL, start_endpoint
from labkit.engine_plugins.faults import set_replication_lag
from labkit.shared.backend import Connection

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = {
    "01_singleton_items": ("## Optional I ·", "lesson broken: no raise was lost across two Regions"),
    "02_uniqueness": ("## Optional J ·", "lesson broken: the marker held across two Regions"),
}
WHY = "global tables and their replication are labkit's engine's (DynamoDB Local has none)"


def section(lesson: str) -> str:
    """The section's code cells, in order, as one program."""
    text = (ROOT / "lessons" / f"{lesson}.md").read_text(encoding="utf-8")
    start = text.index(SECTIONS[lesson][0])
    return "\n".join(re.findall(r"```\{code-cell\}\n(.*?)```", text[start:], re.S))


def run(lesson: str, conn: Connection) -> dict[str, Any]:
    names: dict[str, Any] = {**vars(recipes.guarded_update), **vars(recipes.uniqueness), "conn": conn}
    names["__name__"] = f"lesson_{lesson}"
    exec(compile(section(lesson), f"{lesson}.md", "exec"), names)  # noqa: S102  the lesson's own code
    return names


@pytest.fixture(scope="module")
def conn() -> Iterator[Connection]:
    with start_endpoint() as endpoint:
        yield Connection("embedded", endpoint.url, "us-east-1", "labkit-regions-lesson")


@pytest.mark.slow  # the loop runs these cells, with these asserts, in the notebook (nbval)
@pytest.mark.parametrize("lesson", SECTIONS)
def test_lesson_section__embedded_endpoint__loss_found_and_both_fixes_hold(lesson: str, conn: Connection) -> None:
    """The naive code loses across two Regions; home Region and MRSC pass (the section's own asserts)."""
    names = run(lesson, conn)
    assert not names["naive"].passed and names["home"].passed and names["strong"].passed


@pytest.mark.parametrize("lesson", SECTIONS)
def test_lesson_section__replication_synchronous__its_assertion_of_the_loss_fails(
    lesson: str, conn: Connection
) -> None:
    """Mutation: replication made synchronous (lag 0), the section's assertion of the loss fails."""
    previous = set_replication_lag(conn, 0)
    try:
        with pytest.raises(AssertionError, match=SECTIONS[lesson][1]):
            run(lesson, conn)
    finally:
        set_replication_lag(conn, previous)


@pytest.mark.parametrize("lesson", SECTIONS)
def test_lesson_section__dynamodb_local_profile__skips_with_its_reason(
    lesson: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the dynamodb-local profile (no global tables) the section's cells skip, each printing why."""
    with start_endpoint(profile=DYNAMODB_LOCAL) as endpoint:
        names = run(lesson, Connection("embedded", endpoint.url, "us-east-1", "labkit-regions-lesson"))
    assert "naive" not in names
    assert capsys.readouterr().out.count(f": {WHY}") == 2
