"""No private name crosses a module boundary inside labkit (docs/style.md §13: an underscore means "this module only").

Every ``from X import a, b`` (one line or many) and every ``module._name`` on an imported labkit
module is read from the syntax tree. A leading underscore may not cross from one module into
another; a package's own ``__init__`` may re-export its submodules' names. Importing a *public*
name from a private module (``from ._errors_map import map_errors``) is fine: that is how httpx
keeps its implementation in ``_client.py`` and its names public.
"""

from __future__ import annotations

import ast
from pathlib import Path

LABKIT = Path(__file__).resolve().parents[2] / "labkit"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_of(path: Path) -> str:
    """``labkit/races/gate.py`` -> ``labkit.races.gate``; a package's ``__init__`` -> the package."""
    parts = list(path.relative_to(LABKIT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute module an import names, or None when it is not a labkit module."""
    if node.level == 0:
        module = node.module or ""
        return module if module == "labkit" or module.startswith("labkit.") else None
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def crossings(path: Path, source: str) -> list[str]:
    """Every private name this module takes from another labkit module, as ``file:line: what``."""
    tree = ast.parse(source)
    here = _module_of(path)
    is_init = path.name == "__init__.py"
    found: list[str] = []
    modules: set[str] = set()  # local names bound to labkit modules (``from . import keys``)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source_module = _resolve(path, node)
        if source_module is None:
            continue
        own_submodule = is_init and source_module.startswith(here + ".")
        for alias in node.names:
            if _private(alias.name) and not (is_init and (source_module == here or own_submodule)):
                found.append(f"{path.relative_to(LABKIT.parent)}:{node.lineno}: {alias.name} from {source_module}")
            modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append(f"{path.relative_to(LABKIT.parent)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_labkit__no_private_name_crosses_a_module_boundary() -> None:
    """Every name one labkit module imports from another is public there (or re-exported by an __init__)."""
    found = [hit for path in sorted(LABKIT.rglob("*.py")) for hit in crossings(path, path.read_text(encoding="utf-8"))]
    assert found == [], "make these names public in their own module (or merge the modules):\n" + "\n".join(found)


def test_crossings__multi_line_import_and_module_attribute__both_found() -> None:
    """The check reads the syntax tree: a private name on the third line of an import block is caught."""
    path = LABKIT / "races" / "example.py"
    source = (
        "from .gate import (\n"
        "    NO_RETRIES,\n"
        "    _Probe,\n"
        ")\n"
        "from labkit.patterns.uniqueness import keys\n"
        "from ..errors import __doc__\n"
        "from argparse import _SubParsersAction\n"
        "keys._condition({})\n"
    )
    assert crossings(path, source) == [
        "labkit/races/example.py:1: _Probe from labkit.races.gate",
        "labkit/races/example.py:8: keys._condition",
    ]


def test_crossings__a_package_init_re_exports_its_own_submodules() -> None:
    """``labkit/lab/exercises/__init__.py`` may import ``_x`` from its own submodules, not from a sibling package."""
    path = LABKIT / "lab" / "exercises" / "__init__.py"
    source = "from ._calls import _helper\nfrom ...races.gate import _Probe\n"
    assert crossings(path, source) == ["labkit/lab/exercises/__init__.py:2: _Probe from labkit.races.gate"]
