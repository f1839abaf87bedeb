"""labkit's public API is curated: __all__ lists exactly the public names, sorted."""

from __future__ import annotations

import types

import labkit

#: Submodules that are public by name, re-exported on purpose.
PUBLIC_MODULES = {"invariants", "races", "singleton", "uniqueness"}


def test_all__matches_public_names_and_is_sorted() -> None:
    """Every public attribute is in __all__, every __all__ entry exists, and the list is sorted."""
    public = {n for n in dir(labkit) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if isinstance(getattr(labkit, n), types.ModuleType)}
    assert set(labkit.__all__) - {"__version__"} == (public - modules) | (modules & PUBLIC_MODULES)
    assert list(labkit.__all__) == sorted(labkit.__all__)
    assert all(hasattr(labkit, name) for name in labkit.__all__)
