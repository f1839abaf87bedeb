"""The race lab's faults: what happens to one call, and the ``"B2: lose-response"`` notation."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...shared.catalogue import (
    WEAK_ANSWER_HEADER,
    WEAK_ANSWER_OPERATIONS,
    WEAK_ANSWER_WHERE,
    WHOLE_TABLE,
    WeakAnswer,
    weak_answer_misuse,
)
from ...shared.errors import ValidationError
from ...shared.validation import check_int
from .answers import CONFLICTABLE, THROTTLES, did_you_mean
from .views import View, parse_view


@dataclass(frozen=True)
class Fault:
    """A fault on one call. Subclasses say what happens to that call."""

    #: what the history's ``injected`` column shows
    label: str = field(default="", init=False)

    def check(self, operation: str | None) -> None:
        """Refuse an operation this fault cannot apply to (None: not known before the run)."""

    def gives(self, operation: str, params: Mapping[str, Any] | None = None) -> bool:
        """Can DynamoDB answer this call (``params`` None: judged by the operation alone) with this fault?"""
        return True


@dataclass(frozen=True)
class LoseResponse(Fault):
    """The request is sent and applied; the answer is lost (``ReadTimeoutError`` by default)."""

    error: str = "read-timeout"  # or "connection-closed"

    def __post_init__(self) -> None:
        if self.error not in ("read-timeout", "connection-closed"):
            raise ValidationError(f"LoseResponse(error={self.error!r}): use 'read-timeout' or 'connection-closed'")
        object.__setattr__(self, "label", "lose-response")


@dataclass(frozen=True)
class Conflict(Fault):
    """Answered without writing: TransactionConflict at action ``item`` (or TransactionConflictException)."""

    item: int = 0

    def __post_init__(self) -> None:
        check_int("Conflict item", self.item, least=0, hint="the 0-based index of the transaction's action")
        object.__setattr__(self, "label", "transaction-conflict")

    def gives(self, operation: str, params: Mapping[str, Any] | None = None) -> bool:
        """Only writes and transactions meet a transaction in flight, never a GetItem or a Query."""
        return operation in CONFLICTABLE


@dataclass(frozen=True)
class Throttle(Fault):
    """Answered without writing: ProvisionedThroughputExceededException (or ThrottlingException...)."""

    code: str = "ProvisionedThroughputExceededException"

    def __post_init__(self) -> None:
        throttles = THROTTLES
        if self.code not in throttles:
            raise ValidationError(f"Throttle(code={self.code!r}): use one of {', '.join(throttles)}")
        object.__setattr__(
            self,
            "label",
            "throttle"
            if self.code == throttles[0]
            else "throttling-exception"
            if self.code == throttles[1]
            else "request-limit",
        )


@dataclass(frozen=True)
class ServerError(Fault):
    """HTTP 500 InternalServerError; with ``applied=True`` the write happens first."""

    applied: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", "internal-error-applied" if self.applied else "internal-error")


@dataclass(frozen=True)
class Hold(Fault):
    """A TransactWriteItems held in flight: locked at this turn, committed at the actor's next."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", "hold")


@dataclass(frozen=True)
class WeakAnswerFault(Fault):
    """An answer DynamoDB may give that is weaker than labkit's engine gives by default.

    The race lab sends the real request with the directive header
    :data:`~labkit.shared.catalogue.WEAK_ANSWER_HEADER` and the embedded endpoint (profile ``labkit``)
    answers as DynamoDB may, from its own state. Only where DynamoDB can give it (:meth:`refusal`).
    """

    #: the operations it applies to (from the operation catalogue)
    operations: frozenset[str] = field(default=frozenset(), init=False, repr=False)
    #: the one view asked for, named by the run's writes it misses (:mod:`labkit.engine_plugins.faults.views`); None:
    #: the engine's own search (the first view, newest first, that answers otherwise)
    view: View | None = None

    @property
    def named(self) -> str:
        """``stale-read``, or with its view: ``stale-read (index misses A1)`` (what the history shows)."""
        return self.label if self.view is None else f"{self.label} ({self.view.text()})"

    def gives(self, operation: str, params: Mapping[str, Any] | None = None) -> bool:
        return operation in self.operations if params is None else self.refusal(operation, params) is None

    def refusal(self, operation: str, params: Mapping[str, Any]) -> str | None:
        """Why DynamoDB cannot give this answer to the request (the engine's own words), or None when it can."""
        if operation not in self.operations:
            return f"DynamoDB never answers {operation} with {self.label}; {WEAK_ANSWER_WHERE}"
        found = weak_answer_misuse(self.label, operation, params)
        return None if found is None else found.removeprefix(f"{WEAK_ANSWER_HEADER}: ")

    def _named(self, kind: WeakAnswer, operations: frozenset[str]) -> None:
        object.__setattr__(self, "label", str(kind))
        object.__setattr__(self, "operations", operations)


@dataclass(frozen=True)
class StaleRead(WeakAnswerFault):
    """An eventually consistent read answered as of before recent writes to what it reads.

    GetItem, BatchGetItem, Query, Scan without ``ConsistentRead=True`` (a GSI query always); the
    reader's own write counts: eventually consistent reads do not promise read-your-writes. Without
    a ``view`` the engine answers with the first view, newest first, that differs; with one
    (``B3: stale-read (index misses A1)``, :mod:`labkit.engine_plugins.faults.views`) exactly that view.
    """

    def __post_init__(self) -> None:
        self._named(WeakAnswer.STALE_READ, WEAK_ANSWER_OPERATIONS[WeakAnswer.STALE_READ])


@dataclass(frozen=True)
class TornRead(WeakAnswerFault):
    """A BatchGetItem, Query or Scan beside another actor's TransactWriteItems that sees some of its writes.

    DynamoDB's isolation table lists them as read-committed against transactions (whatever their
    ``ConsistentRead``): never an uncommitted write, but one transaction's items may be read at
    different moments. GetItem and TransactGetItems are serializable: never torn.
    """

    def __post_init__(self) -> None:
        self._named(WeakAnswer.TORN_READ, WEAK_ANSWER_OPERATIONS[WeakAnswer.TORN_READ])


@dataclass(frozen=True)
class UnprocessedItems(WeakAnswerFault):
    """A batch answered 200 with its last item left over (``UnprocessedItems``/``UnprocessedKeys``)."""

    def __post_init__(self) -> None:
        self._named(WeakAnswer.UNPROCESSED_ITEMS, WEAK_ANSWER_OPERATIONS[WeakAnswer.UNPROCESSED_ITEMS])


@dataclass(frozen=True)
class ShortPage(WeakAnswerFault):
    """A Query or Scan page that ends after its first item, with a ``LastEvaluatedKey``."""

    def __post_init__(self) -> None:  # Query and Scan (PartiQL's pages are not one of the race lab's kinds)
        self._named(WeakAnswer.SHORT_PAGE, WEAK_ANSWER_OPERATIONS[WeakAnswer.SHORT_PAGE] & WHOLE_TABLE)


@dataclass(frozen=True)
class TtlDelete(Fault):
    """DynamoDB's TTL process runs just before this call is sent: every item expired by the lab's clock
    is deleted, a service delete each (``Labkit.ExpireItems``); then the call goes out as usual.

    DynamoDB deletes an expired item "at any time, typically within a few days": a read or a write
    may meet it still there, or already gone. Labkit's embedded endpoint (profile ``labkit``) only.
    """

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", TTL_DELETE)


TTL_DELETE = "ttl-delete"

#: The fault DSL's names.
FAULT_NAMES: dict[str, Callable[[], Fault]] = {
    "lose-response": LoseResponse,
    "connection-closed": lambda: LoseResponse("connection-closed"),
    "transaction-conflict": Conflict,
    "throttle": Throttle,
    "throttling-exception": lambda: Throttle("ThrottlingException"),
    "request-limit": lambda: Throttle("RequestLimitExceeded"),
    "internal-error": ServerError,
    "internal-error-applied": lambda: ServerError(applied=True),
    "hold": Hold,
    WeakAnswer.STALE_READ: StaleRead,
    WeakAnswer.TORN_READ: TornRead,
    WeakAnswer.UNPROCESSED_ITEMS: UnprocessedItems,
    WeakAnswer.SHORT_PAGE: ShortPage,
    TTL_DELETE: TtlDelete,
}
#: The weak answers the race lab places (they need labkit's embedded endpoint, profile ``labkit``).
WEAK_ANSWERS: tuple[str, ...] = (
    WeakAnswer.STALE_READ,
    WeakAnswer.UNPROCESSED_ITEMS,
    WeakAnswer.SHORT_PAGE,
    WeakAnswer.TORN_READ,
)
#: The weak answers whose views the race lab names by the run's writes (``B3: stale-read (index misses A1)``).
VIEWED: tuple[str, ...] = (WeakAnswer.STALE_READ, WeakAnswer.TORN_READ)
#: What only labkit's embedded endpoint (profile ``labkit``) gives on purpose: the weak answers, the TTL deletion.
EMBEDDED_ONLY: tuple[str, ...] = (*WEAK_ANSWERS, TTL_DELETE)
#: ``B2: lose-response``; a thread an actor starts (a sub-actor) takes a ``#``: ``A.1#2: lose-response``.
_SPEC = re.compile(
    r"^\s*(?P<actor>[^\s:#]+?)#?(?P<n>\d+)\s*:\s*(?P<name>[a-z-]+)(?:\((?P<arg>\d+)\))?"
    r"(?:\s+\((?P<view>[^()]*)\))?\s*$"
)


def call_point(actor: str, n: int) -> str:
    """How faults name an actor's n-th call: ``B2``, or ``A.1#2`` for a sub-actor (its name ends in a digit)."""
    return f"{actor}#{n}" if actor[-1:].isdigit() else f"{actor}{n}"


FaultSpec = Mapping[str, Mapping[int, Fault]] | Sequence[str]


def parse_faults(spec: FaultSpec | None, actors: Sequence[str]) -> dict[str, dict[int, Fault]]:
    """``["B2: lose-response", "A1: transaction-conflict(1)"]`` or ``{"B": {2: LoseResponse()}}``
    -> ``{actor: {call number (1-based): Fault}}``. Bad input is a ValidationError naming it."""
    plan: dict[str, dict[int, Fault]] = {}
    if spec is None:
        return plan
    names = ", ".join(map(repr, actors))
    if isinstance(spec, Mapping):
        entries = [(a, n, f) for a, calls in spec.items() for n, f in dict(calls).items()]
    elif isinstance(spec, str):
        raise ValidationError(f"faults={spec!r}: pass a list of strings, e.g. [{spec!r}]")
    else:
        entries = []
        for text in spec:
            match = _SPEC.match(str(text))
            if match is None:
                raise ValidationError(
                    f"fault {text!r} is not 'ACTOR N: fault', e.g. 'B2: lose-response' "
                    f"(B's second call); faults: {', '.join(FAULT_NAMES)}"
                )
            name = match["name"]
            if name not in FAULT_NAMES:
                raise ValidationError(
                    f"unknown fault {name!r} in {text!r}"
                    f"{did_you_mean(name, list(FAULT_NAMES))}; "
                    f"known faults: {', '.join(FAULT_NAMES)}"
                )
            fault = (
                Conflict(int(match["arg"])) if match["arg"] and name == "transaction-conflict" else FAULT_NAMES[name]()
            )
            if match["arg"] and name != "transaction-conflict":
                raise ValidationError(
                    f"{text!r}: only transaction-conflict takes an argument (the 0-based action index)"
                )
            if match["view"] is not None:
                if name not in VIEWED:
                    raise ValidationError(f"{text!r}: only {' and '.join(VIEWED)} name a view in parentheses")
                fault = FAULT_NAMES[name]()
                assert isinstance(fault, StaleRead | TornRead)
                fault = type(fault)(view=parse_view(match["view"], name))
            entries.append((match["actor"], int(match["n"]), fault))
    for actor, n, fault in entries:
        if actor not in actors:
            raise ValidationError(f"a fault names actor {actor!r}, which is not one of {names}")
        check_int(f"fault on {actor!r}: call number", n, least=1, hint="1 is the actor's first DynamoDB call")
        if not isinstance(fault, Fault):
            raise ValidationError(
                f"fault on {actor}{n} is {fault!r}, not a labkit.engine_plugins.faults.Fault "
                "(LoseResponse(), Conflict(), Throttle(), ServerError(), Hold(), StaleRead(), UnprocessedItems(), "
                "ShortPage(), TornRead(), TtlDelete())"
            )
        if n in plan.setdefault(actor, {}):
            raise ValidationError(f"two faults on {actor}{n}; give each call at most one")
        plan[actor][n] = fault
    return plan


def turns_needed(calls: Mapping[int, Fault]) -> int:
    """Turns an actor needs for its last faulted call to fire (a Hold takes two turns)."""
    if not calls:
        return 0
    last = max(calls)
    holds = sum(1 for n, f in calls.items() if isinstance(f, Hold) and n < last)
    return last + holds + (1 if isinstance(calls[last], Hold) else 0)


def check_order(plan: Mapping[str, Mapping[int, Fault]], order: Sequence[str]) -> None:
    """Refuse, before the run, a fault the order can never reach."""
    for actor, calls in plan.items():
        need, have = turns_needed(calls), list(order).count(actor)
        if need > have:
            last = max(calls)
            held = (
                " (a hold takes two turns: prepare, then commit)"
                if any(isinstance(f, Hold) for f in calls.values())
                else ""
            )
            raise ValidationError(
                f"the fault on {actor}{last} ({calls[last].label}) can never fire: the order "
                f"{' '.join(order)!r} gives {actor!r} {have} turn(s) and it needs {need}{held}. "
                f"Give {actor!r} more turns or move the fault to an earlier call"
            )
