"""The engine's shape: only labkit/endpoint/store/moto_adapter.py (the one door to moto) imports moto; no
engine module is large; one module per operation in labkit/endpoint/operations/, found from the catalogue."""

from __future__ import annotations

import ast
from pathlib import Path

from labkit.endpoint.operations import NO_STEPS, Steps, module_name, steps_of
from labkit.shared.catalogue import CATALOGUE, DATA_PLANE, STATEMENTS

LABKIT = Path(__file__).resolve().parents[2] / "labkit"
OPERATIONS = LABKIT / "endpoint" / "operations"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_layout__only_the_moto_adapter_imports_moto() -> None:
    importers = sorted(str(p.relative_to(LABKIT)) for p in LABKIT.rglob("*.py") if "moto" in _imports(p))
    assert importers == ["endpoint/store/moto_adapter.py"]


def test_layout__engine_modules_are_a_few_hundred_lines_at_most() -> None:
    sizes = {str(p.relative_to(LABKIT)): len(p.read_text().splitlines()) for p in (LABKIT / "endpoint").rglob("*.py")}
    assert max(sizes.values()) <= 450, sizes


def test_operations__every_module_is_named_for_a_catalogue_operation_and_defines_steps() -> None:
    """A module in operations/ without a record in labkit/shared/catalogue/records.py would never be loaded."""
    modules = {module_name(name): name for name, record in CATALOGUE.items() if record.service == "dynamodb"}
    found = sorted(p.stem for p in OPERATIONS.glob("*.py") if p.stem != "__init__")
    assert [stem for stem in found if stem not in modules] == []
    for stem in found:
        steps = steps_of(modules[stem])
        assert isinstance(steps, Steps) and steps is not NO_STEPS, stem


def test_operations__every_data_plane_and_partiql_operation_has_a_module() -> None:
    """Items are validated by their operation's own check; PartiQL is run by its operation's module."""
    assert sorted(op for op in DATA_PLANE if steps_of(op).check is None) == []
    assert sorted(op for op in STATEMENTS if steps_of(op).execute is None) == []


def test_operations__an_operation_without_a_module_or_record__adds_no_step() -> None:
    """DescribeLimits (in the catalogue, no module) and an unknown name are served by moto's dispatch as they are."""
    assert steps_of("DescribeLimits") is NO_STEPS
    assert steps_of("NoSuchOperation") is NO_STEPS
    assert module_name("BatchGetItem") == "batch_get_item"


def test_engine__names_no_operation() -> None:
    """The engine's dispatch reads the catalogue's derived sets and each operation's module, never an `Op`."""
    tree = ast.parse((LABKIT / "endpoint" / "engine.py").read_text())
    named = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "Op"]
    assert named == []
