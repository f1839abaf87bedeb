"""labkit's public API is curated: __all__ lists exactly the public names, sorted."""

from __future__ import annotations

import importlib
import json
import types
from pathlib import Path

import pytest

import labkit
from labkit import races

#: Submodules that are public by name, re-exported on purpose.
PUBLIC_MODULES = {"invariants", "races", "singleton", "uniqueness"}


def test_all__matches_public_names_and_is_sorted() -> None:
    """Every public attribute is in __all__, every __all__ entry exists, and the list is sorted."""
    public = {n for n in dir(labkit) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if isinstance(getattr(labkit, n), types.ModuleType)}
    assert set(labkit.__all__) - {"__version__"} == (public - modules) | (modules & PUBLIC_MODULES)
    assert list(labkit.__all__) == sorted(labkit.__all__)
    assert all(hasattr(labkit, name) for name in labkit.__all__)


#: Every public name before the house was split into wings (labkit 0.1.0), per module: each must stay
#: public in that module, at the path its layer folder gives it now (docs/decisions.md 163: the error tree is
#: `labkit.shared.errors`; the package's own lazy names did not move). A snapshot, kept as data beside this test.
NAMES_BEFORE_THE_SPLIT: dict[str, list[str]] = json.loads(
    (Path(__file__).with_name("names_before_the_split.json")).read_text(encoding="utf-8")
)
#: Modules whose __all__ is curated: sorted, every entry exists.
CURATED = (
    "labkit.shared.codec",
    "labkit.lab.costs",
    "labkit.embedded",
    "labkit.patterns.counter",
    "labkit.shared.errors",
    "labkit.engine_plugins.faults",
    "labkit.lab.invariants",
    "labkit.lab.plots",
    "labkit.races",
    "labkit.patterns.singleton",
    "labkit.shared.table",
    "labkit.engine_plugins.throughput",
    "labkit.patterns.uniqueness",
)


@pytest.mark.parametrize("module", CURATED)
def test_subpackage_all__sorted_and_every_name_exists(module: str) -> None:
    """Each public module's and subpackage's __all__ is sorted and names only what exists."""
    mod = importlib.import_module(module)
    assert list(mod.__all__) == sorted(mod.__all__)
    assert [n for n in mod.__all__ if not hasattr(mod, n)] == []


@pytest.mark.parametrize("module", sorted(NAMES_BEFORE_THE_SPLIT))
def test_names_before_the_split__still_public_in_the_same_module(module: str) -> None:
    """No public name is lost: every name once public is still in that module's __all__ (in its layer folder)."""
    mod = importlib.import_module(module if module == "labkit" else f"labkit.{module}")
    assert [n for n in NAMES_BEFORE_THE_SPLIT[module] if n not in mod.__all__] == []


def test_races__names_the_explore_and_plugin_modules_use__are_public() -> None:
    """labkit.explore / labkit.pytest_plugin build on these labkit.races names only."""
    wanted = {
        "run_interleaving",
        "all_interleavings",
        "interleavings",
        "count_calls",
        "call_key",
        "Interleaving",
        "parse_order",
        "stress",
        "sweep",
    }
    assert wanted <= set(races.__all__)
