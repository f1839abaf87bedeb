"""docs/architecture.md stays true: the wings import only what the picture allows.

Parsed with ``ast`` (no import runs): a lesson (singleton, uniqueness) never imports the race
lab; the race lab never imports a lesson; faults (used by the race lab and the engine) import
neither a lesson nor the race lab; only the engine (``labkit/endpoint/``) imports moto.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "labkit"
LESSONS = ("singleton", "uniqueness")
RACE_LAB = "races"
#: DynamoDB's failures on purpose: below the race lab (which imports it), beside the engine.
FAULTS = "faults"
#: Where moto may be imported: the engine package (inside it, only apply.py: tests/test_endpoint_layout.py).
ENGINE = ("endpoint/",)


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, as absolute dotted names (relative imports resolved)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]  # a module's package; for __init__ the package itself
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def wing(path: Path) -> str:
    rel = path.relative_to(PACKAGE).as_posix()
    return rel.split("/")[0].removesuffix(".py")


def touches(names: set[str], package: str) -> list[str]:
    return sorted(n for n in names if n == f"labkit.{package}" or n.startswith(f"labkit.{package}."))


@pytest.mark.parametrize("path", [p for p in modules() if wing(p) in LESSONS], ids=str)
def test_lesson__imports__never_the_race_lab_or_another_lesson(path: Path) -> None:
    """A lesson stands on the shared floor only: no labkit.races, no other lesson."""
    names = imported(path)
    assert touches(names, RACE_LAB) == []
    others = [w for w in LESSONS if w != wing(path)]
    assert [n for w in others for n in touches(names, w)] == []


@pytest.mark.parametrize("path", [p for p in modules() if wing(p) == RACE_LAB], ids=str)
def test_race_lab__imports__never_a_lesson(path: Path) -> None:
    """The race lab works on any actor: it imports no lesson."""
    names = imported(path)
    assert [n for w in LESSONS for n in touches(names, w)] == []


@pytest.mark.parametrize("path", [p for p in modules() if wing(p) == FAULTS], ids=str)
def test_faults__imports__never_a_lesson_or_the_race_lab(path: Path) -> None:
    """Faults sit below the race lab (it imports them): no lesson, no labkit.races."""
    names = imported(path)
    assert [n for w in (*LESSONS, RACE_LAB) for n in touches(names, w)] == []


def test_moto__imported_only_by_the_engine() -> None:
    """moto is the engine's business: only labkit/endpoint/ imports it."""
    outside = [
        p.relative_to(PACKAGE).as_posix()
        for p in modules()
        if any(n == "moto" or n.startswith("moto.") for n in imported(p))
        and not p.relative_to(PACKAGE).as_posix().startswith(ENGINE)
    ]
    assert outside == []


def test_imported__relative_import__resolved_to_the_package() -> None:
    """The checker itself: ``from ..races import x`` inside labkit/singleton/ reads as labkit.races."""
    path = PACKAGE / "singleton" / "store.py"
    assert "labkit.errors" in imported(path) and "labkit.singleton.schema" in imported(path)
