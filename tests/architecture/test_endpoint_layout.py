"""The engine's shape: only labkit/endpoint/apply.py imports moto; no engine module is large."""

from __future__ import annotations

import ast
from pathlib import Path

LABKIT = Path(__file__).resolve().parents[2] / "labkit"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_layout__only_apply_imports_moto() -> None:
    importers = sorted(str(p.relative_to(LABKIT)) for p in LABKIT.rglob("*.py") if "moto" in _imports(p))
    assert importers == ["endpoint/apply.py"]


def test_layout__engine_modules_are_a_few_hundred_lines_at_most() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in (LABKIT / "endpoint").glob("*.py")}
    assert max(sizes.values()) <= 450, sizes
