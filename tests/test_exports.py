"""labkit's public API is curated: __all__ lists exactly the public names, sorted."""

from __future__ import annotations

import labkit


def test_all__matches_public_names_and_is_sorted() -> None:
    """Every public attribute is in __all__, every __all__ entry exists, and the list is sorted."""
    public = {n for n in dir(labkit) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if type(getattr(labkit, n)).__name__ == "module"}
    assert set(labkit.__all__) - {"__version__"} == public - modules
    assert list(labkit.__all__) == sorted(labkit.__all__)
