"""notebooks/exercises: one source per exercise gives the learner's notebook and the solution notebook.

Each source in ``lessons/exercises/`` holds the answer between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; ``tools/notebooks.py`` writes the learner's notebook (the stub in its place) and
the solution notebook (the answer kept). The answer, and every definition the notebook gives the
learner, equal ``labkit/lab/exercises/solutions.py``: the code ``labkit exercises`` and the checker's tests
run. ``tests/lessons/test_notebook_sources.py`` checks the committed notebooks equal what the sources generate;
nbval (the README's test command) runs them.
"""

# nbformat has no type hints
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import nbformat
import pytest

from labkit.lab.exercises import names
from labkit.lab.exercises.solutions import REFERENCE
from tests.helpers import load_tool

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS_PY = ROOT / "labkit" / "lab" / "exercises" / "solutions.py"


TOOL = load_tool("notebooks")
SOURCES = [s for s in TOOL.sources() if TOOL.is_exercise(s)]


def _notebooks(source: Path) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """(learner's, solution) as the source generates them."""
    learner, solution = TOOL.targets(source).values()
    return learner, solution


def _checked(source: Path) -> tuple[str, str]:
    """The exercise name and the function the notebook's check cell hands to the checker."""
    text = "\n".join(c.source for c in TOOL.read(source).cells if c.cell_type == "code")
    found = re.search(r'labkit\.lab\.exercises\.check\("([a-z-]+)", (\w+), conn=conn\)', text)
    assert found, f"{source.name}: no `labkit.lab.exercises.check(...)` cell"
    return found[1], found[2]


def _definitions(text: str) -> dict[str, str]:
    """Top-level functions and assignments by name, each with its text (comments after its last line too)."""
    lines = text.splitlines()
    out: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            found = [node.name]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            continue
        end = node.end_lineno or node.lineno
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "\t"))):
            end += 1
        while not lines[end - 1].strip():
            end -= 1
        for name in found:
            out[name] = "\n".join(lines[node.lineno - 1 : end])
    return out


def test_sources__one_per_exercise__in_workshop_order_with_a_learner_and_a_solution_notebook() -> None:
    """Three exercise sources, in labkit.lab.exercises' order; each writes NN_x.ipynb and solutions/NN_x.ipynb."""
    assert [_checked(s)[0] for s in SOURCES] == names()
    for source in SOURCES:
        learner, solution = TOOL.targets(source)
        assert learner == TOOL.NOTEBOOKS / "exercises" / f"{source.stem}.ipynb"
        assert solution == TOOL.NOTEBOOKS / "exercises" / "solutions" / f"{source.stem}.ipynb"


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_solution_notebook__answer_between_markers_is_the_reference_function(source: Path) -> None:
    """The marked cell is exactly the function REFERENCE runs, its body between the markers."""
    exercise, function = _checked(source)
    _, solution = _notebooks(source)
    cell = next(c.source for c in solution.cells if TOOL.BEGIN in c.source)
    body = inspect.getsource(REFERENCE[exercise]).splitlines()
    assert REFERENCE[exercise].__name__ == function
    assert [line for line in cell.splitlines() if line.strip() not in (TOOL.BEGIN, TOOL.END)] == body, (
        f"the answer in {source.relative_to(ROOT)} differs from {function} in labkit/lab/exercises/solutions.py: "
        "make them equal (the checker's tests run solutions.py)"
    )
    assert cell.splitlines()[1].strip() == TOOL.BEGIN and cell.splitlines()[-1].strip() == TOOL.END


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_source__every_definition_solutions_py_also_has__is_the_same_text(source: Path) -> None:
    """What the notebook gives the learner (SETTINGS_KEY, typed) and the answer are copies of solutions.py."""
    reference = _definitions(SOLUTIONS_PY.read_text())
    shared: list[str] = []
    for cell in TOOL.read(source).cells:
        if cell.cell_type != "code" or cell.source.startswith("%"):
            continue
        text = "\n".join(line for line in cell.source.splitlines() if line.strip() not in (TOOL.BEGIN, TOOL.END))
        for name, definition in _definitions(text).items():
            if name in reference:
                assert definition == reference[name], (
                    f"{source.name}: {name} differs from labkit/lab/exercises/solutions.py"
                )
                shared.append(name)
    assert _checked(source)[1] in shared and len(shared) >= 2  # the answer and what the learner is given


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_learner_notebook__has_the_stub_and_no_answer(source: Path) -> None:
    """The learner's cell keeps the signature, raises NotImplementedError, and hides the answer."""
    exercise, _ = _checked(source)
    learner, _ = _notebooks(source)
    text = "\n".join(c.source for c in learner.cells)
    assert TOOL.BEGIN not in text and TOOL.END not in text
    stub = next(c.source for c in learner.cells if TOOL.STUB in c.source)
    assert stub.splitlines() == [inspect.getsource(REFERENCE[exercise]).splitlines()[0], f"    {TOOL.STUB}"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_solution_notebook__titled_solution__asserts_passed__learner_accepts_not_solved(source: Path) -> None:
    """Only the title, the marked regions and the check line differ between the two notebooks."""
    learner, solution = _notebooks(source)
    number = int(source.stem[:2])
    assert learner.cells[0].source.startswith(f"# Exercise {number} · ")
    assert solution.cells[0].source.startswith(f"# Solution to exercise {number} · ")
    assert solution.cells[0].source.endswith("edit that file, not this notebook.*")
    learner_code = "\n".join(c.source for c in learner.cells if c.cell_type == "code")
    solution_code = "\n".join(c.source for c in solution.cells if c.cell_type == "code")
    assert TOOL.LEARNER_CHECK in learner_code and TOOL.SOLUTION_CHECK not in learner_code
    assert TOOL.SOLUTION_CHECK in solution_code and TOOL.LEARNER_CHECK not in solution_code
    differ = [i for i, (a, b) in enumerate(zip(learner.cells, solution.cells, strict=True)) if a.source != b.source]
    assert len(differ) == 3 and differ[0] == 0


def test_learner_source__replaces_every_marked_region_with_the_stub() -> None:
    """learner_source keeps what is outside the markers and the indentation of the stub."""
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\nprint(1)"
    assert TOOL.learner_source(source) == f"def f(x):\n    {TOOL.STUB}\n\nprint(1)"


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_committed_outputs__learner_says_not_solved_yet_and_solution_passed(source: Path) -> None:
    """The committed clean run: learners' check reports 'not solved yet', solutions' 'PASSED'."""
    for path in TOOL.targets(source):
        nb = nbformat.read(path, as_version=4)
        cell = next(c for c in nb.cells if c.cell_type == "code" and "print(verdict.headline)" in c.source)
        text = "".join(o.get("text", "") for o in cell.outputs)
        expected = "PASSED" if path.parent.name == "solutions" else "not solved yet"
        assert text.strip().endswith(expected), text


EXERCISES_DIR = ROOT / "labkit" / "lab" / "exercises"
#: Not a rule: the stub itself ("not solved yet").
NOT_A_RULE = {"not-solved"}


def _verdict_kinds(module: Path) -> set[str]:
    """The finding kinds a checker module can give: the strings in the first argument of every
    ``Finding(...)``, and the first item of every ``("kind", "words")`` pair it returns or assigns
    (the helpers that name a mistake)."""
    kinds: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding" and node.args:
            keys = {id(c) for sub in ast.walk(node.args[0]) if isinstance(sub, ast.Subscript) for c in ast.walk(sub)}
            found = [c.value for c in ast.walk(node.args[0]) if isinstance(c, ast.Constant) and id(c) not in keys]
        elif (
            isinstance(node, ast.Return | ast.Assign)
            and isinstance(node.value, ast.Tuple)
            and len(node.value.elts) == 2
            and (isinstance(node, ast.Return) or isinstance(node.targets[0], ast.Tuple))
        ):
            first = node.value.elts[0]
            found = [first.value] if isinstance(first, ast.Constant) else []
        else:
            continue
        kinds |= {k for k in found if isinstance(k, str) and re.fullmatch(r"[a-z]+(-[a-z]+)*", k)}
    return kinds


def _checker_kinds(exercise: str) -> set[str]:
    """Every kind the exercise's check can give: its own module, the shared rules and trial, and the
    accounts helpers when the module uses them."""
    module = EXERCISES_DIR / f"{exercise.replace('-', '_')}.py"
    shared = [EXERCISES_DIR / "rules.py", EXERCISES_DIR / "trial.py"]
    if "from . import accounts" in module.read_text():
        shared.append(EXERCISES_DIR / "accounts.py")
    return set().union(*(_verdict_kinds(m) for m in [module, *shared])) - NOT_A_RULE


def _task(source: Path) -> str:
    text = source.read_text()
    start = text.index("## Your task")
    return text[start : text.index("```{code-cell}", start)]


def test_verdict_kinds__found_in_the_checkers__the_known_mistakes_and_failures() -> None:
    """The scan of the checkers finds kinds (so the test below cannot pass by finding none)."""
    assert {"read-modify-write", "condition-without-retry", "wrong-client", "timeout"} <= _checker_kinds("raise-limit")
    assert {"missing-normalisation", "no-markers", "separate-calls"} <= _checker_kinds("unique-sign-up")
    assert "old-marker-kept" in _checker_kinds("change-email")


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.stem)
def test_task__names_every_rule_the_checker_enforces_by_its_verdict_name(source: Path) -> None:
    """Each kind of finding the exercise's check can give appears in the task bullets as `kind`, so a
    learner meets every rule before the checker enforces it."""
    exercise, _ = _checked(source)
    task = _task(source)
    missing = sorted(kind for kind in _checker_kinds(exercise) if f"`{kind}`" not in task)
    assert not missing, f"{source.name}: the task never names {missing}; add a bullet for each rule"


@pytest.mark.parametrize(
    ("stem", "rules"),
    [
        ("02_unique_sign_up", ["`'not-an-email'` raises `ValidationError`", "`'  Ada@Example.COM '`", "`'ADA'`"]),
        ("03_change_email", ["`'not-an-email'` raises `ValidationError`", "`'  ADA@New.Example.com '`"]),
        ("01_raise_limit", ["`by` may be negative"]),
        # issue 40: what the checker accepts when a bounded retry gives up, and what to do on a conflict
        # or on a changed account, so a learner who follows the lessons knows before the verdict
        (
            "01_raise_limit",
            [
                "raise `labkit.shared.errors.RetriesExhausted(message, attempts)` having written nothing",
                "counts such a call as not done",
                "giving up there fails (`condition-without-retry`)",
            ],
        ),
        (
            "02_unique_sign_up",
            ["raise `labkit.shared.errors.TransactionConflict(message, reasons)`", "never `ValueTaken` for it"],
        ),
        (
            "03_change_email",
            ["read the account again and retry", "raise `labkit.shared.errors.RetriesExhausted(message, attempts)`"],
        ),
    ],
)
def test_task__bad_input_the_checker_tries__spelled_out(stem: str, rules: list[str]) -> None:
    """The inputs the checker tries (a malformed email must raise ValidationError; a spaced, upper-case
    copy of a taken value is taken), and what it accepts when a call gives up, are in the bullets, word
    for word."""
    task = _task(ROOT / "lessons" / "exercises" / f"{stem}.md")
    assert [r for r in rules if r not in task] == []
