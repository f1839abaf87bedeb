"""``--labkit-artifacts DIR``: a failing test's failing explorations, as files (:mod:`labkit.lab.artifacts`)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

#: Where ``--labkit-artifacts`` gets its writer (the race lab's; imported only when the option is given).
ARTIFACTS_MODULE = "labkit.lab.artifacts"


class Artifacts:
    """``--labkit-artifacts DIR``: the failing explorations of a failing test, written as files."""

    def __init__(self, directory: Path) -> None:
        try:
            self.module: Any = importlib.import_module(ARTIFACTS_MODULE)
        except ImportError as exc:
            raise pytest.UsageError(
                f"--labkit-artifacts needs {ARTIFACTS_MODULE}, which this labkit cannot import ({exc}); "
                "upgrade labkit, or drop the option"
            ) from exc
        self.directory = directory
        self.failed: list[Any] = []
        self.module.add_listener(self.seen)

    def seen(self, exploration: Any) -> None:
        if getattr(exploration, "passed", True) is False:
            self.failed.append(exploration)

    def write(self, nodeid: str) -> list[Path]:
        """Each failing exploration of the test, as ``<test id>[-N].race.json`` / ``.timeline.png``."""
        failed, self.failed = self.failed, []
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_.") or "test"
        written: list[Path] = []
        for i, exploration in enumerate(failed, 1):
            self.directory.mkdir(parents=True, exist_ok=True)
            written += self.module.write_artifacts(exploration, self.directory, stem if i == 1 else f"{stem}-{i}")
        return written

    def close(self) -> None:
        self.module.remove_listener(self.seen)


__all__ = [
    "ARTIFACTS_MODULE",
    "Artifacts",
]
