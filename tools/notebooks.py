"""Build every committed notebook from its text source, then execute it from a clean kernel.

    python3 bootstrap.py notebooks                          # every notebook: regenerate, execute, write
    python3 bootstrap.py notebooks 02_uniqueness exercises/01_raise_limit
    python3 bootstrap.py notebooks --check                  # list notebooks that drifted (fast, runs nothing)

A source is a MyST markdown notebook (jupytext's ``md:myst`` format) under ``lessons/``:

    lessons/NN_topic.md            -> notebooks/NN_topic.ipynb
    lessons/exercises/NN_name.md   -> notebooks/exercises/NN_name.ipynb            (the learner's)
                                      notebooks/exercises/solutions/NN_name.ipynb  (the solution)

An exercise source holds the answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION``. The
learner's notebook replaces each such region with :data:`STUB`; the solution notebook keeps it, is
titled "Solution to exercise N", and its check asserts that the answer passed. A notebook's cells
(type, id, source, metadata) and its kernelspec come from the source alone, so a run without a source
change rewrites only outputs. Each notebook runs in its own folder with a fresh ``python3`` kernel
(this interpreter) and without ``LABKIT_*`` variables, so its outputs come from the embedded endpoint.
``tests/lessons/test_notebook_sources.py`` fails when a committed notebook's cells differ from its source.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "lessons"
NOTEBOOKS = ROOT / "notebooks"
FORMAT = "md:myst"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = "raise NotImplementedError  # replace this line with your code"
#: The exercise notebooks' check line: the learner's accepts "not solved yet", the solution's does not.
LEARNER_CHECK = "assert verdict.passed or verdict.not_solved, verdict"
SOLUTION_CHECK = "assert verdict.passed, verdict"


def sources() -> list[Path]:
    """Every text source, sorted."""
    return sorted(SOURCES.rglob("*.md"))


def name(source: Path) -> str:
    """A source's name for the command line: ``02_uniqueness``, ``exercises/01_raise_limit``."""
    return source.relative_to(SOURCES).with_suffix("").as_posix()


def is_exercise(source: Path) -> bool:
    return source.parent == SOURCES / "exercises"


def read(source: Path) -> nbformat.NotebookNode:
    """The source's cells, as jupytext reads them (no outputs)."""
    return jupytext.read(source, fmt=FORMAT)


def learner_source(text: str) -> str:
    """A cell's source with each marked region replaced by the stub, at the marker's indentation."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        if line.strip() == BEGIN:
            skipping = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif line.strip() == END:
            skipping = False
        elif not skipping:
            out.append(line)
    return "\n".join(out)


def _finish(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Only what the source says: kernelspec, cells, and ids that depend on the cell alone."""
    out = nbformat.v4.new_notebook(metadata={"kernelspec": dict(nb.metadata.get("kernelspec", KERNELSPEC))})
    seen: dict[str, int] = {}
    for cell in nb.cells:
        cell = nbformat.from_dict(dict(cell))
        digest = hashlib.sha1(f"{cell.cell_type}\0{cell.source}".encode()).hexdigest()[:8]
        seen[digest] = seen.get(digest, 0) + 1
        cell.id = digest if seen[digest] == 1 else f"{digest}-{seen[digest]}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        out.cells.append(cell)
    return out


def targets(source: Path) -> dict[Path, nbformat.NotebookNode]:
    """The notebooks a source generates, by path, without outputs."""
    nb = read(source)
    relative = source.relative_to(SOURCES).with_suffix(".ipynb")
    if not is_exercise(source):
        return {NOTEBOOKS / relative: _finish(nb)}
    learner = nbformat.from_dict(nb)
    for cell in learner.cells:
        if cell.cell_type == "code":
            cell.source = learner_source(cell.source)
    solution = nbformat.from_dict(nb)
    title = solution.cells[0]
    title.source = title.source.replace("# Exercise ", "# Solution to exercise ", 1) + (
        f"\n\n*Generated from `lessons/{source.relative_to(SOURCES).as_posix()}` by "
        "`python3 bootstrap.py notebooks`; edit that file, not this notebook.*"
    )
    for cell in solution.cells:
        if cell.cell_type == "code":
            cell.source = cell.source.replace(LEARNER_CHECK, SOLUTION_CHECK)
    return {
        NOTEBOOKS / relative: _finish(learner),
        NOTEBOOKS / relative.parent / "solutions" / relative.name: _finish(solution),
    }


def all_targets() -> dict[Path, nbformat.NotebookNode]:
    return {path: nb for source in sources() for path, nb in targets(source).items()}


def committed() -> list[Path]:
    """Every notebook under notebooks/ (checkpoints aside)."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def cells(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """What must not drift from the source: each cell's type, id, source and metadata."""
    return [
        {"cell_type": c.cell_type, "id": c.get("id"), "source": c.source, "metadata": dict(c.metadata)}
        for c in nb.cells
    ]


def drifted() -> list[str]:
    """One line per committed notebook that differs from its source, is missing, or has no source."""
    problems: list[str] = []
    expected: set[Path] = set()
    for source in sources():
        for path, nb in targets(source).items():
            expected.add(path)
            where, run = path.relative_to(ROOT).as_posix(), f"`python3 bootstrap.py notebooks {name(source)}`"
            if not path.exists():
                problems.append(f"{where}: missing; run {run}")
                continue
            old = nbformat.read(path, as_version=4)
            if cells(old) != cells(nb) or old.metadata.get("kernelspec") != nb.metadata.kernelspec:
                problems.append(
                    f"{where}: its cells differ from {source.relative_to(ROOT).as_posix()}; "
                    f"move any edit of the notebook into the source, then run {run}"
                )
    problems += [f"{p.relative_to(ROOT).as_posix()}: no source in lessons/" for p in committed() if p not in expected]
    return problems


def execute(path: Path, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run ``nb`` top to bottom in a fresh python3 kernel (this interpreter), in ``path``'s folder."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    env = {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")}  # the default backend: embedded
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute(env=env)
    except CellExecutionError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(f"{path.relative_to(ROOT)}: a cell failed (above); the notebook was not written") from None
    version = nb.metadata.get("language_info", {}).get("version")
    if version != platform.python_version():
        raise SystemExit(
            f"{path.name} ran on Python {version}, not on this interpreter: check `jupyter kernelspec list`"
        )
    return nb


def select(names: list[str]) -> list[Path]:
    """The sources the command line names (all when none): by name, source path or notebook path."""
    if not names:
        return sources()
    index: dict[str, Path] = {}
    for source in sources():
        index[name(source)] = index[str(source.relative_to(ROOT))] = source
        for path in targets(source):
            index[str(path.relative_to(ROOT))] = source
    unknown = [n for n in names if n.removeprefix("./") not in index]
    if unknown:
        known = ", ".join(name(s) for s in sources())
        raise SystemExit(f"no source named {', '.join(unknown)}; the sources are: {known}")
    return list(dict.fromkeys(index[n.removeprefix("./")] for n in names))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 bootstrap.py notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="sources to build (default: all), e.g. 02_uniqueness")
    parser.add_argument(
        "--check", action="store_true", help="list notebooks that differ from their source; run nothing"
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = drifted()
        for line in problems:
            print(line)
        print(
            f"{len(problems)} notebook(s) drifted" if problems else f"all {len(committed())} notebooks match lessons/"
        )
        return 1 if problems else 0
    for source in select(args.names):
        for path, nb in targets(source).items():
            print(f"running {path.relative_to(ROOT)} (from {source.relative_to(ROOT)})", flush=True)
            start = time.monotonic()
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(execute(path, nb), path)
            print(f"wrote {path.relative_to(ROOT)} ({time.monotonic() - start:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
