# mypy: disable-error-code="no-untyped-call"
"""tools/reading_time.py: what a lesson's stated time is computed from."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_measure__optional_section_then_summary__split_into_core_and_optional(tmp_path: Path) -> None:
    """Words, code lines (imports skipped) and output lines land in core or optional by heading."""
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
    assert core.minutes() == 9 / rt.PROSE_WPM + 2 / rt.CODE_LPM + 2 / rt.OUTPUT_LPM + rt.RUN_S / 60


def test_lesson_notebooks__stated_core_time__not_below_the_estimate_by_more_than_a_minute() -> None:
    """Each lesson whose first screen states "about **N minutes**" (01 and 02 do) is not estimated above N + 1."""
    rt = load("reading_time")
    checked = []
    for path in sorted((TOOLS.parent / "notebooks").glob("*.ipynb")):
        stated = re.search(r"about \*\*(\d+) minutes\*\*", nbformat.read(path, as_version=4).cells[0].source)
        if stated is None:
            continue
        core, _ = rt.measure(str(path))
        assert core.minutes() <= int(stated[1]) + 1, (
            f"{path.name}: core path takes {core.minutes():.1f} min, stated {stated[1]}"
        )
        checked.append(path.stem)
    assert {"01_singleton_items", "02_uniqueness"} <= set(checked)
