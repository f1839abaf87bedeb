"""How long a newcomer needs for a lesson notebook: its core path, and its optional sections.

The estimate (issue 21): **words/100 + code lines/10 + output lines/20 minutes** — a reader who
reads, runs and thinks about each cell. Counted cell by cell:

* words: markdown outside code fences (100 a minute: reading while following along, not skimming);
* code lines: non-blank lines of code cells and of code fences in markdown (10 a minute; comments and
  NBVAL markers count, the reader reads them too; import statements and ``%`` magics do not);
* output lines: non-blank text lines of the committed outputs (20 a minute). Figures are counted and
  reported, but not timed.

The core path is everything outside the sections whose heading contains "Optional": such a
section runs until the next heading of level 1 or 2 without that word (the summary and checklist
after the optional sections count as core again).
Usage: ``python tools/reading_time.py notebooks/01_singleton_items.ipynb [...]``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import nbformat

PROSE_WPM = 100
CODE_LPM = 10
OUTPUT_LPM = 20


@dataclass
class Load:
    """What a reader takes in: words, code lines, output lines (timed); figures, code cells (reported)."""

    words: int = 0
    code_lines: int = 0
    output_lines: int = 0
    figures: int = 0
    cells: int = 0

    def minutes(self) -> float:
        return self.words / PROSE_WPM + self.code_lines / CODE_LPM + self.output_lines / OUTPUT_LPM


def _markdown(source: str, load: Load) -> None:
    parts = re.split(r"^```.*$", source, flags=re.M)
    for i, part in enumerate(parts):
        if i % 2:  # inside a fence
            load.code_lines += sum(1 for line in part.splitlines() if line.strip())
        else:
            load.words += len(re.findall(r"[\w'’.-]+", part))


def _read_lines(source: str) -> int:
    """Non-blank code lines, without import statements (also parenthesised ones) and magics."""
    count, in_import = 0, False
    for line in source.splitlines():
        if in_import:
            in_import = ")" not in line
            continue
        if line.startswith(("import ", "from ")):
            in_import = line.rstrip().endswith("(")
            continue
        if line.strip() and not line.startswith("%"):
            count += 1
    return count


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


def stated(path: str) -> tuple[int | None, int | None]:
    """The minutes a lesson's first cell states: the core ("about **N minutes**") and the optional
    sections ("the *Optional* sections add about N minutes"), each None if not stated."""
    first = nbformat.read(path, as_version=4).cells[0].source  # type: ignore[no-untyped-call]
    core = re.search(r"about\s+\*\*(\d+) minutes\*\*", first)
    optional = re.search(r"\*Optional\*\s+sections?\s+adds?\s+about\s+(\d+)\s+minutes", first)
    return (int(core[1]) if core else None), (int(optional[1]) if optional else None)


def main(paths: list[str]) -> None:
    for path in paths:
        core, optional = measure(path)
        for name, load, said in zip(("core", "optional"), (core, optional), stated(path), strict=True):
            print(
                f"{path} {name:8} {load.minutes():5.1f} min, stated {said if said is not None else '-'} "
                f"({load.words} words, "
                f"{load.code_lines} code lines, {load.output_lines} output lines, "
                f"{load.figures} figures, {load.cells} code cells)"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
