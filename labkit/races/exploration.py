"""What an exploration found (:class:`Exploration`: the verdict, the counterexample, the replay file it
writes) and who is told when one finishes (listeners: the pytest plugin's ``--labkit-artifacts``).
:func:`~labkit.races.explore.explore` builds it; nothing here runs anything."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..shared.compat import VERSION
from ..shared.errors import ValidationError
from .anomalies import Anomaly
from .interleave import Interleaving
from .replay import FORMAT


@dataclass(frozen=True)
class Exploration:
    """What :func:`explore` found: a verdict, a replayable counterexample, and what it is worth."""

    passed: bool
    #: the order of every call in the failing run, shrunk (``"A B A B"``), or None when it passed
    counterexample: str | None
    runs: int
    guarantee: str
    strategy: str
    #: every order of the dry-run call counts (what exhaustive search of those counts would run)
    orders: int
    #: each task's calls in the dry run (actors and the sub-actors they start)
    calls: dict[str, int]
    seed: int | None = None
    #: the invariant's message for the failing run
    message: str | None = None
    #: the failing run itself (history, results, errors), for a timeline
    interleaving: Interleaving | None = field(default=None, repr=False)
    #: the fault of the failing run (``("B2: lose-response",)``), empty when it had none
    faults: tuple[str, ...] = ()
    #: how many fault scenarios each order was explored in (1: no faults asked for)
    scenarios: int = 1
    #: the counterexample as the search found it, before shrinking, and its faults
    original: str | None = None
    original_faults: tuple[str, ...] = ()
    #: what shrinking did (``"shrunk from 5 to 3 context switches in 7 run(s) of ..."``)
    shrink: str | None = None
    shrink_runs: int = 0
    #: the actors' names
    actors: tuple[str, ...] = ()
    #: the anomalies the explored runs' histories showed (:mod:`~labkit.races.anomalies`), the first
    #: of each kind, each with its run; with no invariant, the failing run's come first
    anomalies: tuple[Anomaly, ...] = ()

    def __bool__(self) -> bool:
        return self.passed

    @property
    def scenario(self) -> str | None:
        """The counterexample and its fault: ``"'A B A B' with B2: lose-response"``."""
        if self.counterexample is None:
            return None
        return f"{self.counterexample!r}" + (f" with {', '.join(self.faults)}" if self.faults else "")

    def summary(self) -> str:
        beside = [a for a in self.anomalies if a.message != self.message]
        also = "".join(f"\n  anomaly in {a.where()}: {a.message}" for a in beside)
        if self.passed:
            return f"passed: {self.guarantee}{also}"
        faults = f", faults={list(self.faults)!r}" if self.faults else ""
        found = f" in {self.scenario}" if self.faults else ""
        shrunk = f"\n  {self.shrink}" if self.shrink else ""
        return (
            f"FAILED after {self.runs} run(s) ({self.strategy}){found}: {self.message}\n"
            f"  replay: run_interleaving(actors, {self.counterexample!r}, conn=conn{faults}){shrunk}{also}"
        )

    def replay_data(self) -> dict[str, Any]:
        """The replay file's content (:data:`~labkit.races.replay.FORMAT`) for this failure."""
        if self.counterexample is None:
            raise ValidationError("this exploration passed: there is no counterexample to save")
        return {
            "format": FORMAT,
            "labkit": VERSION,
            "actors": list(self.actors),
            "order": self.counterexample,
            "faults": list(self.faults),
            "strategy": self.strategy,
            "seed": self.seed,
            "message": self.message,
            "original": self.original,
            "original_faults": list(self.original_faults),
            "shrink": self.shrink,
            "runs": self.runs,
            "guarantee": self.guarantee,
            "anomalies": [{"kind": a.kind, "calls": list(a.calls), "message": a.message} for a in self.anomalies],
        }

    def save(self, path: str | Path) -> Path:
        """Write the replay file (JSON) of this failure; ``labkit.races.load(path)`` reads it back."""
        target = Path(path)
        target.write_text(json.dumps(self.replay_data(), indent=2) + "\n", encoding="utf-8")
        return target


# ---------------------------------------------------------------- listeners

_listeners: list[Callable[[Exploration], Any]] = []


def add_listener(listener: Callable[[Exploration], Any]) -> None:
    """Call ``listener(result)`` with every exploration that finishes (passed or failed), in this process:
    the pytest plugin's ``--labkit-artifacts DIR`` writes the replay file and a timeline for a failing one."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_listener(listener: Callable[[Exploration], Any]) -> None:
    """Stop telling ``listener``; a listener never added is ignored."""
    if listener in _listeners:
        _listeners.remove(listener)


def tell(result: Exploration) -> None:
    """Tell every listener about a finished exploration (a listener that raises fails the explore call)."""
    for listener in list(_listeners):
        listener(result)


__all__ = ["Exploration", "add_listener", "remove_listener", "tell"]
