"""Recording: what a run does with each call its actors make — the contract every session keeps, and
the stress run's tally, which records and never gates (the forced run is :mod:`labkit.races.gate`).

The calls reach a session through :mod:`labkit.shared.intercept` (one interception point every
botocore client passes, and a thread -> actor binding); a session decides what happens to them.
"""

from __future__ import annotations

import time

from ..shared.errors import LabkitError
from ..shared.intercept import CallRecord


class Recorder:
    """What one run (an interleaving, or a stress run) does with the calls its probes see: the base of
    the :class:`labkit.shared.intercept.Session` contract's two keepers (the gate, the stress tally).

    ``before(actor, call)`` runs as the call is about to be sent (it may block: a turn) and
    ``after(actor, call)`` once its answer (or error) is in; ``call`` is the call's
    :class:`~labkit.shared.intercept.CallRecord`. ``hold(actor, call, outcome)``: the call's first half is
    done, its second waits for the actor's next turn (a session that gives no turns goes on at once).
    ``refuse(error)`` is told about a call that cannot be gated (it raises); ``closed`` is set once
    the run is over (a later call from a thread an actor started is refused).
    """

    closed = False

    def refuse(self, error: LabkitError) -> None:
        """A call the race lab cannot gate: end the run with ``error`` (raises)."""
        raise error

    def before(self, actor: str, call: CallRecord) -> None:
        raise NotImplementedError

    def after(self, actor: str, call: CallRecord) -> None:
        raise NotImplementedError

    def hold(self, actor: str, call: CallRecord, outcome: str) -> None:
        """No turns to wait for: the second half goes at once."""


class WorkerTally(Recorder):
    """Counts one worker's calls, failed calls and botocore retries (no gating)."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.retries = 0

    def before(self, actor: str, call: CallRecord) -> None:
        call.start = time.perf_counter()

    def after(self, actor: str, call: CallRecord) -> None:
        self.calls += 1
        self.retries += call.retries
        if call.outcome != "ok":
            self.failed += 1


__all__ = [
    "Recorder",
    "WorkerTally",
]
