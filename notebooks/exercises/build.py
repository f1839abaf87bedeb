"""Build the exercise notebooks — learner and solution — from ONE source, then execute them.

The answers live in ``labkit/exercises/solutions.py`` (the functions ``labkit exercises`` checks).
This script copies each answer into ``solutions/NN_<name>.ipynb`` between nbgrader-style markers
(``### BEGIN SOLUTION`` / ``### END SOLUTION``) and writes ``NN_<name>.ipynb`` for the learner with
that region replaced by ``raise NotImplementedError``. ``tests/test_exercise_notebooks.py`` checks
the committed notebooks equal what this script generates, so the two never drift.

    python notebooks/exercises/build.py            # write all six notebooks and execute them
    python notebooks/exercises/build.py --no-execute
"""

# nbformat has no type hints
# mypy: disable-error-code="no-untyped-call,no-any-return"

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SOURCE = ROOT / "labkit" / "exercises" / "solutions.py"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = "raise NotImplementedError  # replace this line with your code"


@dataclass(frozen=True)
class Spec:
    number: int
    name: str  # the exercise's name in labkit.exercises
    function: str  # the answer's function in solutions.py
    given: tuple[str, ...]  # other top-level names of solutions.py the learner is given
    imports: str
    title: str
    intro: str
    task: str
    closing: str

    @property
    def filename(self) -> str:
        return f"{self.number:02d}_{self.name.replace('-', '_')}.ipynb"


SPECS = (
    Spec(
        1,
        "raise-limit",
        "raise_limit",
        ("SETTINGS_KEY",),
        "from typing import Any",
        "Raise the rate limit — without losing anyone's change",
        "The settings item from lesson 01 (`PK=SETTINGS#APP`, `SK=FLAGS#V1`) holds "
        "`rate_limit_per_minute` (a number), a `version` that counts changes, and other flags. "
        "Two admins press *raise the limit* at the same moment: one by 10, one by 5. Both must count.",
        "Write `raise_limit(client, table_name, by)`: add `by` to `rate_limit_per_minute`.\n\n"
        "* use only the `client` and `table_name` you are given (the checker gives each concurrent "
        "caller its own client);\n"
        "* other attributes of the item must survive; `by` may be negative;\n"
        "* it raises nothing: when your write is refused, deal with it.\n\n"
        "The checker runs your function alone, then as **Ada** (+10) and **Bob** (+5) under *every* "
        "order of their DynamoDB calls, then 4 workers at once, and checks the limit after each.",
        "* A read followed by a write is a race whenever someone else can write in between; the "
        "checker did not *hope* for that moment, it forced every possible one.\n"
        "* The version guard (`ConditionExpression='#v = :read'` + retry) makes any change computed "
        "from a read safe: a refused write means *read again*, never *give up* or *overwrite*.\n"
        "* For pure arithmetic, `ADD` does the read and the write inside DynamoDB in one call.",
    ),
    Spec(
        2,
        "unique-sign-up",
        "sign_up",
        ("typed",),
        "import uuid\nfrom typing import Any\n\nfrom labkit.errors import ValueTaken\n"
        "from labkit.uniqueness import account_key, marker_key, normalise_email, normalise_username",
        "Sign up with a unique email and username",
        "An account is `PK=ACCT#<id>`, `SK=PROFILE` with `email` and `username`. DynamoDB only enforces "
        "the primary key, so the lesson 02 pattern gives every unique value its own **marker item** "
        "`PK=UNIQ#EMAIL#<email>` / `PK=UNIQ#HANDLE#<username>`, `SK=LOCK`, with `owner` = the account id. "
        "Key helpers: `account_key(id)`, `marker_key('EMAIL', email)`; normalisation: "
        "`normalise_email`, `normalise_username` (they raise `ValidationError` for rubbish).",
        "Write `sign_up(client, table_name, email, username) -> str`: create the account and return its id.\n\n"
        "* raise `labkit.errors.ValueTaken({'email': ...})` (or `'username'`) when a value is taken;\n"
        "* never two accounts per email or username *after normalisation* (`' Ada@X.io'` is `ada@x.io`);\n"
        "* never an orphan marker, never an account without its markers.\n\n"
        "`typed` (given) turns a dict of strings into DynamoDB's typed JSON. The checker signs up "
        "**Ada** and **Bob** with the same email (then the same username) under every order of their "
        "calls, tries bad input, and runs 4 workers at once.",
        "* A uniqueness check that *reads* (a Query on a GSI, a Scan, a GetItem) reserves nothing: "
        'two sign-ups can both read "free". Only a conditional write of a key can refuse the second.\n'
        "* One transaction makes the account and its markers all-or-nothing: no orphans, no half-accounts.\n"
        "* Normalise before the value becomes a key, or `ADA@x.io` and `ada@x.io` are two people.",
    ),
    Spec(
        3,
        "change-email",
        "change_email",
        ("typed",),
        "from typing import Any\n\nfrom labkit.errors import ValueTaken\n"
        "from labkit.uniqueness import account_key, marker_key, normalise_email",
        "Change an email — the old one freed, the new one never doubled",
        "Same model as exercise 2: accounts `ACCT#<id>`/`PROFILE` and markers `UNIQ#EMAIL#<email>`/`LOCK` "
        "(owner = account id). The checker starts with Ada (`ada`, ada@example.com) and Bob "
        "(`bob`, bob@example.com), each with their markers.",
        "Write `change_email(client, table_name, account_id, new_email) -> None`.\n\n"
        "* the old email becomes free (someone else can take it afterwards);\n"
        "* the new one cannot be stolen or doubled: raise `labkit.errors.ValueTaken({'email': ...})` "
        "if it is taken, and change nothing;\n"
        "* nothing is ever left half-moved, even when two changes run at once.\n\n"
        "The checker moves Ada and Bob to the same new email under every order of their calls, lets Bob "
        "take the email Ada is leaving, tries bad input, and runs 4 workers at once.",
        "* A change is several writes that must happen together: one transaction, all or nothing.\n"
        "* Conditions make a transaction safe against the others: `attribute_not_exists(PK)` on the new "
        "marker, `email = :old` on the account (so a concurrent change forces a re-read).\n"
        "* Deleting the old marker is part of the change; forgetting it locks that email for ever.",
    ),
)


def _segments() -> dict[str, tuple[str, ast.stmt]]:
    text = SOURCE.read_text()
    lines = text.splitlines()
    out: dict[str, tuple[str, ast.stmt]] = {}
    for node in ast.parse(text).body:
        names = (
            [node.name]
            if isinstance(node, ast.FunctionDef)
            else [t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
        )
        end = node.end_lineno or node.lineno
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith((" ", "\t"))):
            end += 1  # a trailing comment inside the function is not part of the AST node
        while not lines[end - 1].strip():
            end -= 1
        for name in names:
            out[name] = ("\n".join(lines[node.lineno - 1 : end]), node)
    return out


def solution_cell(spec: Spec) -> str:
    """The answer, copied from solutions.py, its body between the solution markers."""
    source, node = _segments()[spec.function]
    assert isinstance(node, ast.FunctionDef)
    lines = source.splitlines()
    head = node.body[0].lineno - node.lineno
    indent = " " * node.body[0].col_offset
    return "\n".join([*lines[:head], indent + BEGIN, *lines[head:], indent + END])


def learner_source(source: str) -> str:
    """A solution cell's source with each marked region replaced by the stub (nbgrader-style)."""
    out: list[str] = []
    skipping = False
    for line in source.splitlines():
        if line.strip() == BEGIN:
            skipping = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif line.strip() == END:
            skipping = False
        elif not skipping:
            out.append(line)
    return "\n".join(out)


def solution_notebook(spec: Spec) -> nbformat.NotebookNode:
    seg = _segments()
    given = "\n\n\n".join(seg[name][0] for name in spec.given)
    # what the answer uses; the stub does not, hence the noqa (ruff lints the notebooks too)
    lines = [
        f"{line}  # noqa: F401" if line.startswith(("import", "from")) and "typing" not in line else line
        for line in spec.imports.splitlines()
    ]
    gap = "\n\n\n" if given.startswith("def ") else "\n\n"
    given_cell = "\n".join(lines) + gap + given
    check = f'verdict = labkit.exercises.check("{spec.name}", {spec.function}, conn=conn)\nverdict'
    cells = [
        new_markdown_cell(
            f"# Exercise {spec.number} · {spec.title}\n\n{spec.intro}\n\n"
            "**Time:** about 15 minutes. **Backend:** the embedded endpoint by default "
            "(`LABKIT_BACKEND=local|aws` switches). The checker is `labkit.exercises` "
            "([labkit/exercises/](../../labkit/exercises/__init__.py)); it makes its own table for "
            "every check and deletes it afterwards."
        ),
        new_code_cell(
            "%matplotlib inline\nimport labkit.exercises\nfrom labkit.lab import setup_lab\n\n"
            f'conn = setup_lab("exercise-{spec.name}")'
        ),
        new_markdown_cell(f"## Your task\n\n{spec.task}"),
        new_code_cell(given_cell),
        new_markdown_cell("## Your answer\n\nReplace `raise NotImplementedError` with your code."),
        new_code_cell(solution_cell(spec)),
        new_markdown_cell(
            "## Check it\n\nEvery order of the concurrent callers' DynamoDB calls, a short storm, bad input, "
            "then the table's invariants. A failure names the mistake, the order that showed it "
            "(replay it with `labkit.races.run_interleaving`) and its timeline. A few seconds."
        ),
        new_code_cell(check),
        new_code_cell(
            "# NBVAL_CHECK_OUTPUT\nprint(verdict.headline)\nassert verdict.passed or verdict.not_solved, verdict"
        ),
        new_markdown_cell(
            "## Stuck?\n\nHints come in levels: run the cell, then change the `1` to `2`, `3`, `4` — each "
            "level gives a little more away."
        ),
        new_code_cell(f'print(labkit.exercises.hint("{spec.name}", 1))'),
        new_markdown_cell(f"## What you just proved\n\nWhen the check says **PASSED**:\n\n{spec.closing}"),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    return nb


def learner_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's notebook: the solution notebook with its marked regions stubbed, no outputs."""
    nb = nbformat.from_dict(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = learner_source(cell.source)
            cell.outputs = []
            cell.execution_count = None
    return nb


def solution_final(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The solution notebook asserts it passes (the learner's accepts 'not solved yet')."""
    out = nbformat.from_dict(nb)
    for cell in out.cells:
        if cell.cell_type == "code" and "assert verdict.passed or verdict.not_solved" in cell.source:
            cell.source = "# NBVAL_CHECK_OUTPUT\nprint(verdict.headline)\nassert verdict.passed, verdict"
    return out


def build() -> dict[Path, nbformat.NotebookNode]:
    """Every notebook this script writes, by path (without outputs)."""
    out: dict[Path, nbformat.NotebookNode] = {}
    for spec in SPECS:
        base = solution_notebook(spec)
        out[HERE / spec.filename] = learner_notebook(base)
        solved = solution_final(base)
        solved.cells[0].source = solved.cells[0].source.replace(
            f"# Exercise {spec.number} ·", f"# Solution to exercise {spec.number} ·", 1
        ) + (
            "\n\n*Generated by `notebooks/exercises/build.py` from `labkit/exercises/solutions.py`; "
            "edit those, not this notebook.*"
        )
        out[HERE / "solutions" / spec.filename] = solved
    return out


def sources(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """What must not drift: each cell's type and source."""
    return [(c.cell_type, c.source) for c in nb.cells]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="write the notebooks without running them")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for path, nb in build().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        if not args.no_execute:
            subprocess.run(
                [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace", str(path)],
                check=True,
                env=env,
            )
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
