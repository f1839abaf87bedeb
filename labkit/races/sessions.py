"""Recording: what a run does with each call its actors make — the contract every session keeps, and
the stress run's tally, which records and never gates (the forced run is :mod:`labkit.races.gate`).

The calls reach a session through :mod:`labkit.intercept` (one interception point every
botocore client passes, and a thread -> actor binding); a session decides what happens to them.
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import LabkitError


class Session:
    """What one run (an interleaving, or a stress run) does with the calls its probes see.

    ``before(actor, call)`` runs as the call is about to be sent (it may block: a turn) and
    ``after(actor, call)`` once its answer (or error) is in; ``call`` is the call's record
    (operation, params, key; the session adds actor, seq, turn, start, end, outcome, retries).
    ``refuse(error)`` is told about a call that cannot be gated (it raises); ``closed`` is set once
    the run is over (a later call from a thread an actor started is refused).
    """

    closed = False

    def refuse(self, error: LabkitError) -> None:
        """A call the race lab cannot gate: end the run with ``error`` (raises)."""
        raise error

    def before(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError

    def after(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError


class WorkerTally(Session):
    """Counts one worker's calls, failed calls and botocore retries (no gating)."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.retries = 0

    def before(self, actor: str, call: dict[str, Any]) -> None:
        call["start"] = time.perf_counter()

    def after(self, actor: str, call: dict[str, Any]) -> None:
        self.calls += 1
        self.retries += int(call.get("retries") or 0)
        if call.get("outcome") != "ok":
            self.failed += 1


__all__ = [
    "Session",
    "WorkerTally",
]
