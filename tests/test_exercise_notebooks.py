"""notebooks/exercises: learner and solution notebooks come from one source and never drift.

``notebooks/exercises/build.py`` generates both from ``labkit/exercises/solutions.py``; these tests
regenerate them (without executing) and compare every cell's type and source with the committed
notebooks. nbval (the README's test command) runs the notebooks themselves.
"""

# nbformat has no type hints
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from labkit.exercises import names
from labkit.exercises.solutions import REFERENCE

FOLDER = Path(__file__).resolve().parent.parent / "notebooks" / "exercises"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("exercise_notebooks_build", FOLDER / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


BUILD = _builder()
GENERATED = BUILD.build()


@pytest.mark.parametrize("path", sorted(GENERATED), ids=lambda p: str(p.relative_to(FOLDER)))
def test_committed_notebook__equals_what_build_py_generates(path: Path) -> None:
    """Each committed notebook has exactly the cells build.py generates from solutions.py."""
    committed = nbformat.read(path, as_version=4)
    assert BUILD.sources(committed) == BUILD.sources(GENERATED[path]), (
        f"{path.name} drifted from its source: run `python notebooks/exercises/build.py`"
    )


def test_build__one_learner_and_one_solution_notebook_per_exercise() -> None:
    """Three exercises -> three learner notebooks beside three solution notebooks."""
    learner = sorted(p.name for p in GENERATED if p.parent == FOLDER)
    solved = sorted(p.name for p in GENERATED if p.parent == FOLDER / "solutions")
    assert learner == solved == ["01_raise_limit.ipynb", "02_unique_sign_up.ipynb", "03_change_email.ipynb"]
    assert [s.name for s in BUILD.SPECS] == names()


@pytest.mark.parametrize("spec", BUILD.SPECS, ids=lambda s: s.name)
def test_solution_notebook__holds_the_reference_answer_between_markers(spec: object) -> None:
    """The solution cell is the reference function, its body between nbgrader-style markers."""
    nb = GENERATED[FOLDER / "solutions" / spec.filename]  # type: ignore[attr-defined]
    cell = next(c.source for c in nb.cells if BUILD.BEGIN in c.source)
    body = inspect.getsource(REFERENCE[spec.name]).splitlines()  # type: ignore[attr-defined]
    assert [line for line in cell.splitlines() if line.strip() not in (BUILD.BEGIN, BUILD.END)] == body


@pytest.mark.parametrize("spec", BUILD.SPECS, ids=lambda s: s.name)
def test_learner_notebook__has_the_stub_and_no_answer(spec: object) -> None:
    """The learner's cell keeps the signature, raises NotImplementedError, and hides the answer."""
    nb = GENERATED[FOLDER / spec.filename]  # type: ignore[attr-defined]
    text = "\n".join(c.source for c in nb.cells)
    assert BUILD.BEGIN not in text and BUILD.END not in text
    stub = next(c.source for c in nb.cells if BUILD.STUB in c.source)
    assert stub.splitlines()[0] == inspect.getsource(REFERENCE[spec.name]).splitlines()[0]  # type: ignore[attr-defined]
    assert len(stub.splitlines()) == 2


def test_learner_source__replaces_every_marked_region_with_the_stub() -> None:
    """learner_source keeps what is outside the markers and the indentation of the stub."""
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\nprint(1)"
    assert BUILD.learner_source(source) == f"def f(x):\n    {BUILD.STUB}\n\nprint(1)"


@pytest.mark.parametrize("path", sorted(GENERATED), ids=lambda p: str(p.relative_to(FOLDER)))
def test_committed_outputs__learner_says_not_solved_yet_and_solution_passed(path: Path) -> None:
    """The committed clean run: learners' check reports 'not solved yet', solutions' 'PASSED'."""
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "print(verdict.headline)" in c.source)
    text = "".join(o.get("text", "") for o in cell.outputs)
    expected = "PASSED" if path.parent.name == "solutions" else "not solved yet"
    assert text.strip().endswith(expected), text
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))
