"""A failing exploration as files CI keeps: the replay file and the timeline picture.

``write_artifacts(result, directory, stem)`` writes ``<stem>.race.json`` (the replay file,
:mod:`labkit.races.replay`: ``labkit.races.load(path)`` reads it back) and ``<stem>.timeline.png``
(:func:`labkit.lab.plots.timeline` of the failing run, drawn with matplotlib). Without matplotlib the
JSON is written all the same and says, in its ``timeline`` field, why the picture is missing.
The pytest plugin's ``--labkit-artifacts DIR`` calls it for every failing ``explore`` of a test
(through :func:`labkit.races.add_listener`); docs/ci.md shows the workflow step that uploads DIR.

A view (it draws with :mod:`labkit.lab.plots`), so it lives beside the plots, not in the race lab.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..races.exploration import add_listener, remove_listener
from ..shared.errors import ValidationError

if TYPE_CHECKING:
    from ..races import Exploration

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def artifact_stem(name: str) -> str:
    """A file name from a test id: ``tests/test_x.py::test_y[a-b]`` -> ``tests_test_x.py_test_y_a-b``."""
    stem = _UNSAFE.sub("_", name).strip("_.")
    return stem or "explore"


def write_artifacts(result: Exploration, directory: str | Path, stem: str) -> list[Path]:
    """Write ``<stem>.race.json`` and ``<stem>.timeline.png`` for a failing exploration; the paths written."""
    if result.passed or result.counterexample is None:
        raise ValidationError("this exploration passed: there is no counterexample to write")
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    name = artifact_stem(stem)
    data = result.replay_data()
    written: list[Path] = []
    png = folder / f"{name}.timeline.png"
    try:
        from .plots import timeline
    except ImportError as exc:  # matplotlib is optional
        data["timeline"] = f"not drawn: {exc}; install matplotlib (pip install matplotlib) for the picture"
    else:
        if result.interleaving is None:
            data["timeline"] = "not drawn: the exploration kept no run to draw"
        else:
            fig = timeline(result.interleaving)
            fig.savefig(png, dpi=110, bbox_inches="tight")
            data["timeline"] = png.name
            written.append(png)
    target = folder / f"{name}.race.json"
    target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return [target, *written]


__all__ = ["add_listener", "artifact_stem", "remove_listener", "write_artifacts"]
