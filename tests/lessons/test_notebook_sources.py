"""tools/notebooks.py: every committed notebook is generated from its text source in lessons/, and never drifts.

The drift check reads the sources and the committed notebooks (no kernel): each notebook's cells (type,
id, source, metadata) and kernelspec must equal what its source generates, and a notebook without a
source fails. nbval (the README's test command) runs the notebooks themselves.
"""

# nbformat has no type hints
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest
import yaml

from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[2]


TOOL = load_tool("notebooks")
GENERATED = TOOL.all_targets()


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The tool working on a copy of lessons/ and notebooks/ in tmp_path."""
    shutil.copytree(ROOT / "lessons", tmp_path / "lessons")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    monkeypatch.setattr(TOOL, "ROOT", tmp_path)
    monkeypatch.setattr(TOOL, "SOURCES", tmp_path / "lessons")
    monkeypatch.setattr(TOOL, "NOTEBOOKS", tmp_path / "notebooks")
    return TOOL


@pytest.mark.parametrize("path", sorted(GENERATED), ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_committed_notebook__cells_equal_what_its_source_generates(path: Path) -> None:
    """Each committed notebook has exactly the cells (type, id, source, metadata) and kernelspec of its source."""
    committed = nbformat.read(path, as_version=4)
    hint = (
        f"{path.relative_to(ROOT)} drifted from its source in lessons/: move any edit of the notebook into "
        "the source, then run `python3 bootstrap.py notebooks` (docs/notebooks.md)"
    )
    assert TOOL.cells(committed) == TOOL.cells(GENERATED[path]), hint
    assert committed.metadata["kernelspec"] == GENERATED[path].metadata["kernelspec"] == TOOL.KERNELSPEC


def test_every_committed_notebook__has_a_source() -> None:
    """notebooks/ holds the 4 lessons, 3 exercises and their 3 solutions, each generated from lessons/."""
    committed = TOOL.committed()
    assert committed == sorted(GENERATED)
    assert len(committed) == 10 and len(TOOL.sources()) == 7


def test_drift__nothing_changed__no_problem(sandbox: ModuleType) -> None:
    """The copy as committed: nothing to report."""
    assert sandbox.drifted() == []


def test_drift__cell_edited_in_the_notebook__reported(sandbox: ModuleType) -> None:
    """Editing a committed notebook's cell by hand (as JupyterLab would save it) is drift."""
    path = sandbox.NOTEBOOKS / "02_uniqueness.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[5].source += "\nprint('edited in JupyterLab')"
    nbformat.write(nb, path)
    [problem] = sandbox.drifted()
    assert problem.startswith("notebooks/02_uniqueness.ipynb: its cells differ from lessons/02_uniqueness.md; ")
    assert problem.endswith("run `python3 bootstrap.py notebooks 02_uniqueness`")


def test_drift__source_edited_but_not_regenerated__reported(sandbox: ModuleType) -> None:
    """Editing a source without running the command is drift (for an exercise: both of its notebooks)."""
    source = sandbox.SOURCES / "exercises" / "01_raise_limit.md"
    source.write_text(source.read_text().replace("## Your task", "## Your task, edited"))
    assert [line.split(";")[0] for line in sandbox.drifted()] == [
        "notebooks/exercises/01_raise_limit.ipynb: its cells differ from lessons/exercises/01_raise_limit.md",
        "notebooks/exercises/solutions/01_raise_limit.ipynb: its cells differ from lessons/exercises/01_raise_limit.md",
    ]


def test_drift__cell_metadata_or_kernelspec_changed__reported(sandbox: ModuleType) -> None:
    """A tag added by hand, or another kernel's spec, is drift too."""
    path = sandbox.NOTEBOOKS / "01_singleton_items.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].metadata["tags"] = ["hide-input"]
    nbformat.write(nb, path)
    other = sandbox.NOTEBOOKS / "03_hot_keys_and_costs.ipynb"
    nb = nbformat.read(other, as_version=4)
    nb.metadata["kernelspec"]["display_name"] = "Python 3"
    nbformat.write(nb, other)
    assert [line.split(":")[0] for line in sandbox.drifted()] == [
        "notebooks/01_singleton_items.ipynb",
        "notebooks/03_hot_keys_and_costs.ipynb",
    ]


def test_drift__notebook_without_a_source__reported(sandbox: ModuleType) -> None:
    """A notebook committed without a source in lessons/ fails, as does a source whose notebook is missing."""
    shutil.copy(sandbox.NOTEBOOKS / "04_faults_and_retries.ipynb", sandbox.NOTEBOOKS / "05_new.ipynb")
    (sandbox.NOTEBOOKS / "02_uniqueness.ipynb").unlink()
    assert sandbox.drifted() == [
        "notebooks/02_uniqueness.ipynb: missing; run `python3 bootstrap.py notebooks 02_uniqueness`",
        "notebooks/05_new.ipynb: no source in lessons/",
    ]


def test_generate__twice__same_notebook_and_ids_depend_on_the_cell_alone() -> None:
    """Generating is deterministic; a cell's id changes only when that cell changes."""
    source = ROOT / "lessons" / "01_singleton_items.md"
    first, second = TOOL.targets(source), TOOL.targets(source)
    assert {p: nbformat.writes(nb) for p, nb in first.items()} == {p: nbformat.writes(nb) for p, nb in second.items()}
    nb = next(iter(first.values()))
    ids = [c.id for c in nb.cells]
    assert len(set(ids)) == len(ids)
    assert set(nb.metadata) == {"kernelspec"}  # jupytext's own header stays in the source


@pytest.mark.parametrize("path", sorted(GENERATED), ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_committed_notebook__executed_top_to_bottom_in_one_clean_run(path: Path) -> None:
    """Every code cell ran, in order, once: execution counts 1..N, no timing metadata."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert nb.metadata["language_info"]["name"] == "python"


def test_command__check__says_every_notebook_matches() -> None:
    """`python3 bootstrap.py notebooks --check`, in this environment, runs no kernel and finds no drift."""
    env = {**os.environ, "LABKIT_SKIP_INSTALL": "1", "LABKIT_VENV": sys.prefix}
    out = subprocess.run(
        [sys.executable, "bootstrap.py", "notebooks", "--check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == "all 10 notebooks match lessons/"


def test_command__unknown_name__lists_the_sources(sandbox: ModuleType) -> None:
    """A name that is no source stops before running anything and names the sources."""
    with pytest.raises(SystemExit, match=r"no source named 05_nope; the sources are: 01_singleton_items, .*exercises/"):
        sandbox.main(["05_nope"])


def test_command__names__source_notebook_or_path_all_select_the_source() -> None:
    """A lesson by name, an exercise by its solution notebook's path, a source by its path."""
    picked = TOOL.select(
        ["02_uniqueness", "notebooks/exercises/solutions/03_change_email.ipynb", "lessons/02_uniqueness.md"]
    )
    assert [TOOL.name(p) for p in picked] == ["02_uniqueness", "exercises/03_change_email"]


def test_command__runs_a_notebook_in_its_folder_without_labkit_variables(
    sandbox: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command writes the executed notebook in place: a fresh kernel of this python, in the notebook's
    folder, LABKIT_* unset (outputs come from the default backend), counts 1..N, cells as in the source."""
    (sandbox.SOURCES / "09_probe.md").write_text(
        "---\nkernelspec:\n  display_name: Python 3 (ipykernel)\n  language: python\n  name: python3\n---\n\n"
        "# Probe\n\n```{code-cell}\nimport os, sys\nprint(os.getcwd())\n```\n\n"
        "```{code-cell}\nprint(sys.executable, os.environ.get('LABKIT_BACKEND'))\n```\n"
    )
    monkeypatch.setenv("LABKIT_BACKEND", "local")
    assert sandbox.main(["09_probe"]) == 0
    nb = nbformat.read(sandbox.NOTEBOOKS / "09_probe.ipynb", as_version=4)
    outputs = [c.outputs[0]["text"].strip() for c in nb.cells if c.cell_type == "code"]
    assert outputs == [str(sandbox.NOTEBOOKS), f"{sys.executable} None"]
    assert [c.execution_count for c in nb.cells if c.cell_type == "code"] == [1, 2]
    assert sandbox.drifted() == []


def test_command__cell_fails__error_shown_and_committed_notebook_left_as_it_was(
    sandbox: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lesson whose cell raises stops the command with the cell's error; the committed notebook is untouched."""
    path = sandbox.NOTEBOOKS / "04_faults_and_retries.ipynb"
    before = path.read_bytes()
    source = sandbox.SOURCES / "04_faults_and_retries.md"
    source.write_text(source.read_text().replace("```{code-cell}\n", "```{code-cell}\nraise ValueError('broken')\n", 1))
    with pytest.raises(
        SystemExit, match=r"notebooks/04_faults_and_retries.ipynb: a cell failed \(above\); the notebook"
    ):
        sandbox.main(["04_faults_and_retries"])
    err = capsys.readouterr().err  # the failing cell and its traceback (coloured by IPython)
    assert "raise ValueError('broken')" in err and "ValueError" in err and err.rstrip().endswith("broken")
    assert path.read_bytes() == before


def test_lab_settings__jupytext_adds_no_launcher_item() -> None:
    """jupytext (installed for the drift test) would add "Text Notebook" launcher items; the lab's settings switch
    off every format its schema turns on, so learners see the launcher they saw before."""
    import json

    from labkit.commands.launcher import SETTINGS_DIR

    schema_file = Path(sys.prefix, "share/jupyter/labextensions/jupyterlab-jupytext/schemas/jupyterlab-jupytext")
    schema = json.loads((schema_file / "plugin.json").read_text())
    on_by_default = {k for k, v in schema["properties"].items() if v.get("default") is True}
    overrides = json.loads((SETTINGS_DIR / "overrides.json").read_text())["jupyterlab-jupytext:plugin"]
    assert on_by_default and overrides == dict.fromkeys(on_by_default, False)


ENGINE_ONLY = re.compile(r"""engine_available\(conn,\s*(["'])(.+?)\1\)""")


@pytest.mark.parametrize("source", sorted((ROOT / "lessons").glob("[0-9][0-9]_*.md")), ids=lambda p: p.stem)
def test_lesson_source__cells_skipping_on_dynamodb_local__are_its_front_matter_and_compare_no_output(
    source: Path,
) -> None:
    """Each cell that guards a part with engine_available(conn, why) is listed, with that why, in the
    lesson's front matter (local_skips); and none is a # NBVAL_CHECK_OUTPUT cell, since on DynamoDB Local
    it prints why it skips where the committed output is the engine's."""
    text = source.read_text(encoding="utf-8")
    cells = re.findall(r"```\{code-cell\}\n(.*?)```", text, re.S)
    guarded = [cell for cell in cells if ENGINE_ONLY.search(cell)]
    whys = [m[2] for cell in guarded for m in ENGINE_ONLY.finditer(cell)]
    header = yaml.safe_load(text.split("\n---\n", 1)[0].removeprefix("---\n"))
    assert sorted(header["labkit"]["local_skips"] or []) == sorted(whys), f"{source.name}: front matter local_skips"
    checked = [cell.splitlines()[0] for cell in guarded if "# NBVAL_CHECK_OUTPUT" in cell.splitlines()]
    assert not checked, f"{source.name}: a cell that skips on DynamoDB Local compares its output: {checked}"
