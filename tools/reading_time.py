"""How long a newcomer needs for a lesson notebook: its core path, and its optional sections.

The model (issue 27; a newcomer's own estimates agreed with it): **words/130 + code lines/5 +
output lines/15 minutes, plus 1 minute per "Predict" prompt and 1 per figure** — a reader who
reads, runs, predicts and looks. Counted cell by cell, on the *executed* notebook:

* words: markdown outside code fences (130 a minute: reading while following along);
* code lines: non-blank lines of code cells and of code fences in markdown (5 a minute: read,
  understood, run). Everything counts — imports, comments, NBVAL markers — but ``%`` magics;
* output lines: non-blank text lines of the committed outputs (15 a minute);
* a figure (an ``image/png`` output) and a ``🔮 **Predict:**`` prompt: a minute each.

The core path is everything outside the sections whose heading contains "Optional": such a
section runs until the next heading of level 1 or 2 without that word (the summary and checklist
after the optional sections count as core again). The stated times live in each lesson's front
matter (``tools/lessons.py``).
Usage: ``python tools/reading_time.py [notebooks/01_singleton_items.ipynb ...]`` (default: every lesson).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

PROSE_WPM = 130
CODE_LPM = 5
OUTPUT_LPM = 15
#: Minutes for each prompt to stop and predict, and for each figure to look at.
PREDICT_MINUTES = 1
FIGURE_MINUTES = 1
PREDICT = re.compile(r"🔮 \*\*Predict:\*\*")


@dataclass
class Load:
    """What a reader takes in: words, code lines, output lines, figures, predict prompts; code cells (reported)."""

    words: int = 0
    code_lines: int = 0
    output_lines: int = 0
    figures: int = 0
    predicts: int = 0
    cells: int = 0

    def minutes(self) -> float:
        reading = self.words / PROSE_WPM + self.code_lines / CODE_LPM + self.output_lines / OUTPUT_LPM
        return reading + self.predicts * PREDICT_MINUTES + self.figures * FIGURE_MINUTES


def _markdown(source: str, load: Load) -> None:
    parts = re.split(r"^```.*$", source, flags=re.M)
    for i, part in enumerate(parts):
        if i % 2:  # inside a fence
            load.code_lines += sum(1 for line in part.splitlines() if line.strip())
        else:
            load.words += len(re.findall(r"[\w'’.-]+", part))
            load.predicts += len(PREDICT.findall(part))


def _read_lines(source: str) -> int:
    """Non-blank code lines (imports and comments too), without ``%`` magics."""
    return sum(1 for line in source.splitlines() if line.strip() and not line.startswith("%"))


def _code(cell: nbformat.NotebookNode, load: Load) -> None:
    load.cells += 1
    load.code_lines += _read_lines(cell.source)
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data:
            load.figures += 1
            continue
        text = out.get("text") or data.get("text/plain", "")
        load.output_lines += sum(1 for line in text.splitlines() if line.strip())


def measure(path: str) -> tuple[Load, Load]:
    """(core, optional) loads of the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    core, optional = Load(), Load()
    current = core
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for segment in re.split(r"^(?=#{1,6} )", cell.source, flags=re.M):
                heading = re.match(r"(#{1,6}) (.*)", segment)
                if heading and "Optional" in heading.group(2):
                    current = optional
                elif heading and len(heading.group(1)) <= 2:
                    current = core
                _markdown(segment, current)
        elif cell.cell_type == "code":
            _code(cell, current)
    return core, optional


def stated(path: str) -> int | None:
    """The core minutes a lesson's first cell states ("about **N minutes**"), None if it states none."""
    first = nbformat.read(path, as_version=4).cells[0].source  # type: ignore[no-untyped-call]
    core = re.search(r"about\s+\*\*(\d+) minutes\*\*", first)
    return int(core[1]) if core else None


def main(paths: list[str]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from lessons import lessons

    meta = {lesson.name: lesson for lesson in lessons()}
    for path in paths or [str(lesson.notebook) for lesson in meta.values()]:
        core, optional = measure(path)
        lesson = meta.get(Path(path).stem)
        said = (lesson.minutes, lesson.optional_minutes) if lesson else (None, None)
        for name, load, minutes in zip(("core", "optional"), (core, optional), said, strict=True):
            print(
                f"{Path(path).name} {name:8} {load.minutes():5.1f} min, stated {minutes or '-'} "
                f"({load.words} words, {load.code_lines} code lines, {load.output_lines} output lines, "
                f"{load.figures} figures, {load.predicts} predictions, {load.cells} code cells)"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
