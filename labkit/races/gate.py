"""Recording and gating: what a run does with each call its actors make (hold it for its turn, record it).

The calls reach a session through :mod:`labkit.intercept` (one interception point every
botocore client passes, and a thread -> actor binding); a session decides what happens to them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from ..errors import OUTCOME_ERRORS, RaceError, error_code
from .keys import call_key

#: The clients the lab hands one-argument actors make exactly one HTTP request per call:
#: botocore's own retries are off. (A team's own client keeps its retries: a turn is one API
#: call, retries included, and the history's ``retries`` column counts them.)
NO_RETRIES: dict[str, Any] = {"retries": {"total_max_attempts": 1, "mode": "standard"}}
#: After an abort, how long to wait for actors to leave (waiting ones leave at once).
ABORT_GRACE = 0.25


class Aborted(BaseException):
    """Raised out of a gated call once the run is aborted; ``except Exception`` cannot swallow it."""


# ---------------------------------------------------------------- recording and gating


class Session:
    """What one run (an interleaving, or a stress run) does with the calls its probes see.

    ``before(actor, call)`` runs as the call is about to be sent (it may block: a turn) and
    ``after(actor, call)`` once its answer (or error) is in; ``call`` is the call's record
    (operation, key; the session adds actor, seq, turn, start, end, outcome, retries).
    ``refuse(error)`` is told about a call that cannot be gated (it raises); ``closed`` is set once
    the run is over (a later call from a thread an actor started is refused).
    """

    closed = False

    def refuse(self, error: RaceError) -> None:
        """A call the race lab cannot gate: end the run with ``error`` (raises)."""
        raise error

    def before(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError

    def after(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError


def _is_outcome(exc: BaseException) -> bool:
    """A DynamoDB error (or a labkit outcome error, or an injected fault) an actor may end with."""
    return isinstance(exc, (ClientError, *OUTCOME_ERRORS)) or hasattr(exc, "labkit_fault")


class GatedRun(Session):
    """One forced interleaving: whose turn it is, who is done, what happened.

    Each call waits in :meth:`before` for its actor's turn; :meth:`after` records it and passes
    the turn on; :meth:`finished` is told when an actor's function ends. The first problem
    (a stall, an actor that raised, a turn not taken) becomes ``failure`` and every waiting call
    raises :class:`Aborted`.
    """

    def __init__(self, order: Sequence[str], deadline: float, strict: bool) -> None:
        self.order = list(order)
        self.requested = tuple(order)
        self.strict = strict
        self.pos = 0
        self.in_flight = False
        self.deadline = deadline
        self.cond = threading.Condition()
        self.failure: RaceError | None = None
        self.done = 0
        self.rows: list[dict[str, Any]] = []
        self.seq: Counter[str] = Counter()
        self.taken: Counter[str] = Counter()
        self.t0 = time.perf_counter()

    def refuse(self, error: RaceError) -> None:
        """The run fails with ``error`` (unless it already failed); the calling actor leaves at once."""
        with self.cond:
            if self.failure is None:
                self.failure = error
            self.cond.notify_all()
        raise Aborted

    def _describe(self) -> str:
        done = " ".join(self.order[: self.pos]) or "(none)"
        return f"order {' '.join(self.requested)!r}, turns taken so far: {done}"

    def before(self, actor: str, call: dict[str, Any]) -> None:
        call["key"] = call_key(call["operation"], call.get("params") or {})
        with self.cond:
            call["actor"] = actor
            call["seq"] = self.seq[actor]
            self.seq[actor] += 1
            while True:
                if self.failure is not None:
                    raise Aborted
                if self.pos >= len(self.order):
                    call["turn"] = None
                    break
                if not self.in_flight and self.order[self.pos] == actor:
                    call["turn"] = self.pos
                    self.in_flight = True
                    self.taken[actor] += 1
                    break
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.failure = self.stalled()
                    self.cond.notify_all()
                    raise Aborted
                self.cond.wait(remaining)
            call["start"] = time.perf_counter() - self.t0

    def after(self, actor: str, call: dict[str, Any]) -> None:
        with self.cond:
            call["end"] = time.perf_counter() - self.t0
            self.rows.append(dict(call))
            if call.get("turn") is not None:
                self.pos += 1
                self.in_flight = False
                self.cond.notify_all()

    def stalled(self) -> RaceError:
        """The error for a run that ran out of time: which turn was never taken, or never answered."""
        nxt = self.order[self.pos] if self.pos < len(self.order) else "?"
        if self.in_flight:  # a slow answer (a loaded machine, a slow endpoint), not a stuck actor
            return RaceError(
                f"timed out: turn {self.pos + 1} (actor {nxt!r}) was taken but its call had not "
                f"answered; {self._describe()}. The endpoint is slow or overloaded: raise `timeout`."
            )
        return RaceError(
            f"timed out: turn {self.pos + 1} (actor {nxt!r}) was never taken; {self._describe()}. "
            f"Check that actor {nxt!r} makes its DynamoDB calls with a botocore-based client (a boto3 "
            "client or resource, a PynamoDB model) on its own thread or threads it starts, and does "
            "not wait on another actor; or raise `timeout`."
        )

    def finished(self, actor: str, exc: BaseException | None) -> None:
        """An actor's function returned (exc None) or raised."""
        with self.cond:
            self.done += 1
            self.cond.notify_all()
            if self.failure is not None or isinstance(exc, Aborted):
                return
            if exc is not None and not _is_outcome(exc):
                error = RaceError(
                    f"actor {actor!r} raised {type(exc).__name__}: {exc} "
                    f"(after {self.taken[actor]} turn(s); {self._describe()}). "
                    "Fix the actor; only DynamoDB errors count as an outcome of a race."
                )
                error.__cause__ = exc
                self.failure = error
            else:
                left = self.order[self.pos :].count(actor)
                if left and self.strict:
                    how = "returned" if exc is None else f"ended with {error_code(exc)}"
                    self.failure = RaceError(
                        f"actor {actor!r} {how} after {self.taken[actor]} turn(s) but the order "
                        f"gives it {self.taken[actor] + left}; {self._describe()}. "
                        f"Give {actor!r} fewer turns, or pass strict=False to drop turns an "
                        "actor no longer takes."
                    )
                elif left:
                    self.order = self.order[: self.pos] + [a for a in self.order[self.pos :] if a != actor]
            self.cond.notify_all()


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


__all__ = ["ABORT_GRACE", "NO_RETRIES", "Aborted", "GatedRun", "Session", "WorkerTally"]
