"""tools/relayer.py: one table moves labkit's modules into layer folders and rewrites every mention."""

from __future__ import annotations

import ast
import json

import pytest

from tests.helpers import load_tool

relayer = load_tool("relayer")

#: A tree as it was before the move, enough for the rewrites below.
OLD_MODULES = {
    "labkit",
    "labkit.errors",
    "labkit.constants",
    "labkit.embedded",
    "labkit.operations",
    "labkit.operations.catalogue",
    "labkit.faults",
    "labkit.faults.kinds",
    "labkit.races",
    "labkit.races.gate",
    "labkit.singleton",
    "labkit.invariants",
    "labkit.lab",
    "labkit.exercises",
}


def context() -> object:
    return relayer.Context(modules=OLD_MODULES, dotted=relayer.dotted_moves())


def rewrite(source: str, old_path: str, new_path: str) -> str:
    warnings: list[str] = []
    rewritten: str = relayer.rewrite_python(source, old_path, new_path, context(), warnings)
    return rewritten


def test_relayer__on_this_tree__changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """Idempotent: on the tree its own output made, a second run moves and rewrites nothing."""
    assert relayer.main(["--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("relayer: 0 files to move, 0 files to rewrite")


def test_map_path__a_rename_inside_a_moved_package__applies_on_top_of_the_move() -> None:
    """labkit/operations/ -> labkit/shared/catalogue/, and its catalogue.py -> records.py."""
    assert relayer.map_path("labkit/operations/requests.py") == "labkit/shared/catalogue/requests.py"
    assert relayer.map_path("labkit/operations/catalogue.py") == "labkit/shared/catalogue/records.py"
    assert relayer.map_path("labkit/embedded.py") == "labkit/embedded/__init__.py"
    assert relayer.map_path("labkit/races/gate.py") == "labkit/races/gate.py"


def test_rewrite_python__moved_module__relative_imports_resolved_from_old_place_written_from_new() -> None:
    """`from ..errors import X` in labkit/faults/kinds.py becomes `from ...shared.errors import X`."""
    source = "from .. import constants as C\nfrom ..errors import ValidationError\nfrom . import kinds\n"
    new = rewrite(source, "labkit/faults/kinds.py", "labkit/engine_plugins/faults/kinds.py")
    assert new == (
        "from ...shared import constants as C\nfrom ...shared.errors import ValidationError\nfrom . import kinds\n"
    )


def test_rewrite_python__module_becomes_its_packages_face__imports_one_level_deeper() -> None:
    """labkit/embedded.py -> labkit/embedded/__init__.py: `from .endpoint import X` -> `from ..endpoint import X`."""
    source = "from .endpoint import DynamoEngine\nfrom .operations import Op\n"
    new = rewrite(source, "labkit/embedded.py", "labkit/embedded/__init__.py")
    assert new == "from ..endpoint import DynamoEngine\nfrom ..shared.catalogue import Op\n"


def test_rewrite_python__submodules_that_part__one_statement_per_new_package() -> None:
    """`from . import invariants, races, singleton` splits: the lab's, the race lab's, the patterns'."""
    new = rewrite("if X:\n    from . import invariants, races, singleton\n", "labkit/__init__.py", "labkit/__init__.py")
    assert new == (
        "if X:\n    from .lab import invariants\n    from . import races\n    from .patterns import singleton\n"
    )
    ast.parse(new)


def test_rewrite_python__renamed_submodule__keeps_its_local_name() -> None:
    """`from labkit import operations as ops` -> `from labkit.shared import catalogue as ops`."""
    new = rewrite("from labkit import operations as ops\nfrom labkit import operations\n", "t.py", "t.py")
    assert new == "from labkit.shared import catalogue as ops\nfrom labkit.shared import catalogue as operations\n"


def test_rewrite_python__pep562_lazy_table__values_follow_their_modules() -> None:
    """labkit/__init__.py's `_LAZY` values move with their modules; its keys (the public names) do not."""
    source = '_LAZY = {"FlagStore": "singleton", "singleton": "singleton", "races": "races"}\ndef __getattr__(n): ...\n'
    new = rewrite(source, "labkit/__init__.py", "labkit/__init__.py")
    assert new.splitlines()[0] == (
        '_LAZY = {"FlagStore": "patterns.singleton", "singleton": "patterns.singleton", "races": "races"}'
    )


def test_rewrite_mentions__dotted_names_and_paths__longest_first__once() -> None:
    """Docs, strings and entry points: `labkit.operations.catalogue` -> `labkit.shared.catalogue.records`;
    a second pass changes nothing; `labkit.endpoint.operations` is another module and stays."""
    patterns = relayer.mention_patterns(relayer.dotted_moves())
    text = (
        "`labkit.operations.catalogue` `labkit.operations` labkit/operations/catalogue.py labkit/faults/ "
        '"labkit.errors.ValidationError" labkit.endpoint.operations labkit = "labkit.cli:main" labkit/embedded.py'
    )
    once = relayer.rewrite_mentions(text, patterns)
    assert once == (
        "`labkit.shared.catalogue.records` `labkit.shared.catalogue` labkit/shared/catalogue/records.py "
        'labkit/engine_plugins/faults/ "labkit.shared.errors.ValidationError" labkit.endpoint.operations '
        'labkit = "labkit.commands.cli:main" labkit/embedded/__init__.py'
    )
    assert relayer.rewrite_mentions(once, patterns) == once


def test_rewrite_from_lines__docs_and_notebooks__a_submodule_follows_its_module() -> None:
    """In a notebook's code: `from labkit import exercises` -> `from labkit.lab import exercises`; names stay."""
    warnings: list[str] = []
    text = '"from labkit import exercises\\n", "from labkit import connect\\n"'
    new = relayer.rewrite_from_lines(text, context(), "nb.ipynb", warnings)
    assert new == '"from labkit.lab import exercises\\n", "from labkit import connect\\n"'
    assert warnings == []


def test_rewrite_segments__paths_built_from_parts__follow_the_move() -> None:
    """`LABKIT / "exercises" / "solutions.py"` -> `LABKIT / "lab" / "exercises" / "solutions.py"`."""
    assert relayer.rewrite_segments('p = LABKIT / "exercises" / "solutions.py"') == (
        'p = LABKIT / "lab" / "exercises" / "solutions.py"'
    )
    assert relayer.rewrite_segments('p = ROOT / "labkit" / "endpoint" / "engine.py"') == (
        'p = ROOT / "labkit" / "endpoint" / "engine.py"'
    )


def test_plan_moves__a_source_that_exists_nowhere__fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table entry whose source and target are both missing is an error, before anything moves."""
    monkeypatch.setitem(relayer.MOVES, "labkit/no_such_module.py", "labkit/shared/no_such_module.py")
    with pytest.raises(relayer.RelayerError, match="labkit/no_such_module.py does not exist"):
        relayer.plan_moves([])


def test_renew_cell_ids__a_generated_notebooks_rewritten_cell__gets_its_new_sources_id() -> None:
    """tools/notebooks.py names a cell by a digest of its source: a rewritten cell's id follows; a
    hand-made notebook's ids (not digests) are left as they are."""
    old = {"cells": [{"cell_type": "code", "source": ["from labkit import exercises\n"]}]}
    new = {"cells": [{"cell_type": "code", "source": ["from labkit.lab import exercises\n"]}]}
    (old_id,) = relayer._cell_ids(old)
    (new_id,) = relayer._cell_ids(new)
    old["cells"][0]["id"] = new["cells"][0]["id"] = old_id
    renewed = relayer.renew_cell_ids(json.dumps(old, indent=1), json.dumps(new, indent=1))
    assert json.loads(renewed)["cells"][0]["id"] == new_id != old_id
    new["cells"][0]["id"] = old["cells"][0]["id"] = "hand-made"
    assert relayer.renew_cell_ids(json.dumps(old), json.dumps(new)) == json.dumps(new)
