"""The recipe code a lesson shows is the code in recipes/: one source, checked here.

A lesson code cell that shows a recipe starts with the line ``# recipes/<module>.py``; the rest of the
cell is that module's code: import lines the module has, then top-level definitions (functions,
classes, constants), each identical, character for character, to the definition of the same name in
the module. What the race lab proves about the module (tests/cookbook/) is thus what the reader copies.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "recipes"
SHOWN = re.compile(r"\A# recipes/(\w+)\.py\n")
CELL = re.compile(r"```\{code-cell\}\n(.*?)```", re.S)


def definitions(source: str) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """The top-level definitions of ``source`` by name (their exact text, decorators included), and what
    it imports, as (module, name) pairs."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[str, str] = {}
    imports: set[tuple[str, str]] = set()
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        text = "\n".join(lines[start : node.end_lineno])
        if isinstance(node, ast.ImportFrom):
            imports.update((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            imports.update((alias.name, "") for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = text
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = text
    return found, imports


def shown_cells() -> list[tuple[str, int, str, str]]:
    """(lesson, cell number, module, the cell's code after its first line) for every cell showing a recipe."""
    cells = []
    for source in sorted((ROOT / "lessons").rglob("*.md")):
        for n, cell in enumerate(CELL.findall(source.read_text(encoding="utf-8")), start=1):
            match = SHOWN.match(cell)
            if match:
                cells.append((source.stem, n, match[1], cell[match.end() :]))
    return cells


CELLS = shown_cells()


@pytest.mark.parametrize(("lesson", "n", "module", "code"), CELLS, ids=[f"{c[0]}-cell{c[1]}-{c[2]}" for c in CELLS])
def test_lesson_cell_showing_a_recipe__is_the_recipe_file(lesson: str, n: int, module: str, code: str) -> None:
    """Every definition the cell shows is the module's definition of that name, character for character."""
    path = RECIPES / f"{module}.py"
    assert path.exists(), f"lessons/{lesson}.md code cell {n} shows recipes/{module}.py, which does not exist"
    recipe, recipe_imports = definitions(path.read_text(encoding="utf-8"))
    shown, shown_imports = definitions(code)
    assert shown, f"lessons/{lesson}.md code cell {n}: no definition from recipes/{module}.py in it"
    assert shown_imports <= recipe_imports, f"imports recipes/{module}.py lacks: {shown_imports - recipe_imports}"
    for name, text in shown.items():
        assert name in recipe, f"lessons/{lesson}.md cell {n} defines {name!r}, which recipes/{module}.py does not"
        assert text == recipe[name], (
            f"lessons/{lesson}.md code cell {n}: {name} differs from recipes/{module}.py; copy the module's "
            "definition into the cell (the module is the one the race lab proves), then rebuild the notebook"
        )


def bound_and_used(source: str) -> tuple[set[str], dict[str, set[str]]]:
    """The names ``source`` binds at top level (imports and definitions), and for each definition the
    names it reads that it does not bind itself (parameters, locals)."""
    tree = ast.parse(source)
    bound: set[str] = set()
    used: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            continue
        names = [node.name] if isinstance(node, ast.FunctionDef | ast.ClassDef) else []
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        bound.update(names)
        loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local |= {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
        for name in names:
            used[name] = loads - local
    return bound, used


def test_lesson_cells_showing_a_recipe__bring_their_imports() -> None:
    """Copied cell by cell, a recipe runs: every module-level name a shown definition reads (an import
    such as ``json`` or ``ClientError``, a constant, a helper) is imported or defined in that cell or in
    an earlier cell of the same lesson showing the same module — not borrowed from the lesson's setup."""
    missing = []
    shown_so_far: dict[tuple[str, str], set[str]] = {}
    for lesson, n, module, code in CELLS:
        recipe_bound, _ = bound_and_used((RECIPES / f"{module}.py").read_text(encoding="utf-8"))
        bound, used = bound_and_used(code)
        have = shown_so_far.setdefault((lesson, module), set())
        have |= bound
        for name, reads in used.items():
            lacking = sorted((reads & recipe_bound) - have)
            if lacking:
                missing.append(f"lessons/{lesson}.md cell {n} ({module}): {name} reads {', '.join(lacking)}")
    assert not missing, "a recipe cell lacks the imports or definitions it uses:\n" + "\n".join(missing)


def test_every_recipe__shown_or_linked_by_a_lesson() -> None:
    """Each module of recipes/ is taught somewhere: a lesson shows some of its code or links to it."""
    lessons = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "lessons").glob("*.md"))
    shown = {module for _, _, module, _ in CELLS}
    modules = {p.stem for p in RECIPES.glob("*.py") if p.stem != "__init__"}
    missing = sorted(m for m in modules if m not in shown and f"recipes/{m}.py" not in lessons)
    assert not missing, f"recipes no lesson shows or links: {missing}"


def test_recipes__import_nothing_from_labkit() -> None:
    """Plain boto3: a recipe can be copied into a service that does not have labkit."""
    for path in RECIPES.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.split(".")[0] == "labkit"], f"{path.name} imports labkit"
