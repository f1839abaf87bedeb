"""One DynamoDB call as the race lab records it: :class:`CallRecord`, defined once, on the floor.

The interception point makes it (:mod:`labkit.shared.intercept.wrapper`: the operation, its parameters,
the client's region) and keeps it in botocore's request context under :data:`CALL`; the session
the calling thread is bound to fills in what it records (the gate: actor, turn, times, the task's
clock), the interception point the outcome, and the race lab's faults what was injected. Each
field has one writer, named beside it. A run's history is made of :meth:`CallRecord.row`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The key of a call's record in botocore's request context.
CALL = "labkit_call"


@dataclass(eq=False)
class CallRecord:
    """One call of a bound thread: what it asked, when it went, how it ended."""

    #: the operation (``PutItem``) — the interception point
    operation: str
    #: the request's parameters, after boto3's resources have serialised their values — the interception point
    params: Mapping[str, Any]
    #: the client's region (the race lab asks each table's key schema there) — the interception point
    region: str | None = None
    #: the task that made it (``A``, ``A.1``) and its number among that task's calls (0-based) — the session
    actor: str = ""
    seq: int = 0
    #: the item, for people (``ACCT#1/PROFILE``) — the session
    key: str = ""
    #: its turn in the run (None: it ran free, past the order, or no gate ordered it) — the gate
    turn: int | None = None
    #: seconds since the run began: when the call went (None: not yet) and when its answer came — the session
    start: float | None = None
    end: float | None = None
    #: calls of other tasks that had to come first (a start, a join, a notify): task -> how many — the gate
    deps: dict[str, int] = field(default_factory=dict)
    #: ``ok``, DynamoDB's error code, or the client error's name; and botocore's retries — the interception point
    outcome: str = ""
    retries: int = 0
    #: the fault injected on it (``lose-response``; ``stale-read (none; ...)``) — labkit.engine_plugins.faults
    injected: str | None = None
    #: what the answer held, from botocore's parsed answer (what the race lab's anomalies read) — the
    #: interception point: ``found``, did a GetItem return an Item / a Query or Scan a Count above 0
    #: (None: another operation, or no answer); ``more``, a LastEvaluatedKey; ``left``, how many
    #: requests came back in UnprocessedItems / UnprocessedKeys
    found: bool | None = None
    more: bool = False
    left: int = 0
    #: the ids of the global tables' deliveries its answer says it made (``X-Labkit-Replications``, labkit's
    #: embedded endpoint) — the interception point; the race lab makes each a step of the run
    made: tuple[int, ...] = ()

    @property
    def sent(self) -> bool:
        """The call has gone (its turn granted, or it ran free)."""
        return self.start is not None

    @property
    def answered(self) -> bool:
        return self.end is not None

    def row(self) -> dict[str, Any]:
        """The call as a history row (``Interleaving.records``): a plain dict of its fields."""
        return {
            "operation": self.operation,
            "params": self.params,
            "region": self.region,
            "actor": self.actor,
            "seq": self.seq,
            "key": self.key,
            "start": self.start,
            "end": self.end,
            "deps": dict(self.deps),
            "outcome": self.outcome,
            "retries": self.retries,
            "injected": self.injected,
            "turn": self.turn,
            "found": self.found,
            "more": self.more,
            "left": self.left,
        }


__all__ = ["CALL", "CallRecord"]
