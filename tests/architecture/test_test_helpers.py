"""Tests import their helpers from modules, never from a conftest.py (issue 36).

A ``conftest.py`` is pytest's: it holds fixtures and hooks, and pytest imports it itself. A helper a
test file imports (a function, a class, a constant) lives in a plain module named for what it holds
(tests/helpers.py, tests/endpoint/tables.py, tests/races/increments.py...). Both rules are read from
the files' ASTs (nothing is imported): an import of a conftest module in any spelling, at module level
or inside a function, anywhere under tests/ or benchmarks/ fails here with its file and line; so does
a conftest.py that defines anything but a fixture or a ``pytest_*`` hook.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The folders whose Python files may import test helpers (the benchmarks import some).
CHECKED = ("tests", "benchmarks")


def package_of(path: Path, root: Path) -> list[str]:
    """The dotted package ``path`` sits in, relative to ``root`` (``tests/endpoint/x.py`` -> tests, endpoint)."""
    return list(path.relative_to(root).parent.parts)


def imported_modules(node: ast.Import | ast.ImportFrom, package: list[str]) -> list[str]:
    """Every module ``node`` imports, absolute: ``from .conftest import x`` in tests/endpoint is
    tests.endpoint.conftest; ``from tests.races import conftest`` is tests.races.conftest too."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = package[: len(package) - node.level + 1] if node.level else []
    module = ".".join([*base, *([node.module] if node.module else [])])
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


def conftest_imports(root: Path, folders: tuple[str, ...] = CHECKED) -> list[str]:
    """``file:line: module`` for every import of a conftest module by a Python file under ``folders`` of ``root``."""
    found: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            package = package_of(path, root)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found.extend(
                        f"{path.relative_to(root)}:{node.lineno}: {module}"
                        for module in imported_modules(node, package)
                        if module.rpartition(".")[2] == "conftest"
                    )
    return found


def is_fixture(node: ast.FunctionDef) -> bool:
    """Decorated ``@pytest.fixture`` or ``@pytest.fixture(...)`` (or a bare ``fixture`` imported from pytest)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
            isinstance(target, ast.Name) and target.id == "fixture"
        ):
            return True
    return False


def helpers_defined(conftest: Path) -> list[str]:
    """The top-level functions and classes of ``conftest`` that are neither a fixture nor a ``pytest_*`` hook."""
    tree = ast.parse(conftest.read_text(encoding="utf-8"))
    return [
        f"{node.name} (line {node.lineno})"
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        or (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and not (node.name.startswith("pytest_") or (isinstance(node, ast.FunctionDef) and is_fixture(node)))
        )
    ]


def test_tests__no_file_imports_from_a_conftest() -> None:
    """No file under tests/ or benchmarks/ imports a conftest module: helpers come from plain modules."""
    assert conftest_imports(ROOT) == []


def test_conftest__defines_only_fixtures_and_hooks() -> None:
    """Every tests/**/conftest.py defines fixtures and pytest_* hooks only; a helper function or class is a module's."""
    found = {
        str(path.relative_to(ROOT)): helpers
        for path in sorted((ROOT / "tests").rglob("conftest.py"))
        if (helpers := helpers_defined(path))
    }
    assert found == {}


def test_conftest_imports__the_guard_catches_every_spelling(tmp_path: Path) -> None:
    """The import check can fail: absolute, relative, package-then-name, plain and function-level imports are found."""
    folder = tmp_path / "tests" / "endpoint"
    folder.mkdir(parents=True)
    (folder / "test_planted.py").write_text(
        "from tests.endpoint.conftest import make_table\n"
        "from .conftest import key\n"
        "from . import conftest\n"
        "import tests.races.conftest\n"
        "from tests.endpoint.tables import scan_all\n"
        "NOTE = 'from tests.endpoint.conftest import x'\n"
        "def test_x():\n"
        "    from ..races.conftest import put_counter\n"
    )
    assert conftest_imports(tmp_path, ("tests",)) == [
        "tests/endpoint/test_planted.py:1: tests.endpoint.conftest",
        "tests/endpoint/test_planted.py:2: tests.endpoint.conftest",
        "tests/endpoint/test_planted.py:3: tests.endpoint.conftest",
        "tests/endpoint/test_planted.py:4: tests.races.conftest",
        "tests/endpoint/test_planted.py:8: tests.races.conftest",
    ]


def test_helpers_defined__a_helper_in_a_conftest__found_fixtures_and_hooks_are_not(tmp_path: Path) -> None:
    """The conftest check can fail: a function and a class are found; fixtures (bare or called) and hooks are not."""
    conftest = tmp_path / "conftest.py"
    conftest.write_text(
        "import pytest\n"
        "LIMIT = 3\n"
        "@pytest.fixture\ndef a(): ...\n"
        "@pytest.fixture(scope='module')\ndef b(): ...\n"
        "def pytest_configure(config): ...\n"
        "def make_table(client): ...\n"
        "class Clock: ...\n"
    )
    assert helpers_defined(conftest) == ["make_table (line 8)", "Clock (line 9)"]
