"""How long a newcomer needs for a lesson notebook: its core path, and its optional sections.

Counts what a reader must take in, cell by cell, and converts it at fixed rates:

* prose: words of markdown outside code fences, at ``PROSE_WPM`` words a minute;
* code: non-blank lines of code cells and of code fences in markdown, at ``CODE_LPM`` lines a
  minute (NBVAL markers and comments count: the reader reads them too; import statements and
  ``%matplotlib`` do not: a reader skims them);
* outputs: text lines of committed outputs, at ``OUTPUT_LPM`` lines a minute, and
  ``FIGURE_MIN`` minutes per figure;
* running: ``RUN_S`` seconds per code cell (press Shift-Enter, wait, glance).

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

PROSE_WPM = 200
CODE_LPM = 10
OUTPUT_LPM = 20
FIGURE_MIN = 0.5
RUN_S = 5


@dataclass
class Load:
    """What a reader takes in: words, code lines, output lines, figures, code cells."""

    words: int = 0
    code_lines: int = 0
    output_lines: int = 0
    figures: int = 0
    cells: int = 0

    def minutes(self) -> float:
        return (
            self.words / PROSE_WPM
            + self.code_lines / CODE_LPM
            + self.output_lines / OUTPUT_LPM
            + self.figures * FIGURE_MIN
            + self.cells * RUN_S / 60
        )


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


def main(paths: list[str]) -> None:
    for path in paths:
        core, optional = measure(path)
        for name, load in (("core", core), ("optional", optional)):
            print(
                f"{path} {name:8} {load.minutes():5.1f} min  ({load.words} words, "
                f"{load.code_lines} code lines, {load.output_lines} output lines, "
                f"{load.figures} figures, {load.cells} code cells)"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
