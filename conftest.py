"""Repository-wide pytest configuration: how nbval runs the notebooks (conventions: docs/notebooks.md).

stderr differs from run to run (kernel paths, warnings), so it is never compared.
Only cells marked ``# NBVAL_CHECK_OUTPUT`` compare their output (``--nbval-lax``);
every cell still fails the run if it raises, which is how lessons assert themselves.
"""

from __future__ import annotations

from typing import Any


def pytest_collectstart(collector: Any) -> None:
    if getattr(collector, "fspath", None) is not None and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)
