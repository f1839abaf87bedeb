"""Faults on purpose: DynamoDB's failures, injected at an exact point or by rule.

Two levels, one set of error shapes (:func:`rejection`):

**Race lab, per actor and per call** (client side, any backend)::

    run_interleaving(actors, "A B A B", conn=conn,
                     faults=["B2: lose-response", "A1: transaction-conflict"])
    # or faults={"B": {2: LoseResponse()}, "A": {1: Conflict()}}

A fault lands on an actor's N-th DynamoDB call (1-based) inside botocore's send loop
(``before-send``), so botocore handles it exactly as it would handle DynamoDB's answer:

=====================  ==================================================================
``lose-response``      the real request is sent and applied, then the client raises
                       ``ReadTimeoutError`` (``LoseResponse("connection-closed")``:
                       ``ConnectionClosedError``) — the answer never arrives
``transaction-conflict``  answered without writing: a TransactWriteItems gets
                       ``TransactionCanceledException`` with ``TransactionConflict`` at
                       action ``item`` and ``None`` elsewhere; a single-item write gets
                       ``TransactionConflictException``
``throttle``           ``ProvisionedThroughputExceededException`` (``throttling-exception``:
                       ``ThrottlingException``), nothing written
``internal-error``     HTTP 500 ``InternalServerError``, nothing written
                       (``internal-error-applied``: written, then the 500)
``hold``               a TransactWriteItems is *in flight*: at its turn the endpoint locks its
                       items (a real request), the turn passes, and it commits at the actor's
                       next turn. Competing writes in between get what DynamoDB gives.
                       Embedded endpoint only.
=====================  ==================================================================

Every injected fault is named in the race lab's history (column ``injected``).

**Embedded endpoint, by rule** (:class:`FaultRules`, :class:`FaultInjector` — an engine
hook): operation, table, partition key, error, probability (seeded), count, apply_first.
``labkit serve --faults FILE`` loads a JSON file (:func:`load_rules`); a notebook whose
kernel talks to a shared endpoint switches rules on and off with
:func:`set_endpoint_faults` / :func:`endpoint_faults`, through labkit-only control
operations (``X-Amz-Target: Labkit.SetFaults``...) that the endpoint answers on
127.0.0.1 only, because it listens nowhere else. JSON format::

    {"seed": 7,
     "rules": [{"operation": "PutItem", "table": "labkit-faults", "key": "ACCT#1",
                "error": "ProvisionedThroughputExceededException",
                "probability": 0.5, "count": 3, "apply_first": false}]}

Only ``operation`` and ``error`` are required (``"*"`` matches any data-plane operation);
``probability`` defaults to 1, ``count`` (how many times the rule fires) to unlimited.
"""

from __future__ import annotations

import binascii
import contextlib
import itertools
import json
import random
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from .endpoint_hooks import Rejection, RequestInfo
from .errors import ConfigurationError, RaceError, ValidationError

if TYPE_CHECKING:
    from .backend import Connection

# ---------------------------------------------------------------- DynamoDB's error shapes

ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"

#: Every error a fault may name -> (HTTP status, DynamoDB's message). "TransactionConflict"
#: takes the shape the operation gets from DynamoDB (see :func:`rejection`).
ERRORS: dict[str, tuple[int, str]] = {
    "ProvisionedThroughputExceededException": (
        400,
        "The level of configured provisioned throughput for the table was exceeded. "
        "Consider increasing your provisioning level with the UpdateTable API.",
    ),
    "ThrottlingException": (400, "Rate of requests exceeds the allowed throughput."),
    "RequestLimitExceeded": (
        400,
        "Throughput exceeds the current throughput limit for your account. "
        "Please contact AWS Support at https://aws.amazon.com/support request a limit increase",
    ),
    "InternalServerError": (500, "Internal server error"),
    "ServiceUnavailable": (503, "The service is currently unavailable or busy."),
    "TransactionConflict": (400, "Transaction is ongoing for the item"),
}
#: DynamoDB's message for a single-item write that meets a transaction in flight.
CONFLICT_EXCEPTION_MESSAGE = "Operation was rejected because there is an ongoing transaction for the item."
#: Data-plane operations a rule may name ("*" matches them all).
OPERATIONS = (
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactGetItems",
    "TransactWriteItems",
)
#: Operations DynamoDB can refuse with a transaction conflict.
CONFLICTABLE = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems")
_HELD = "LabkitTransactionHeld"


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _actions(params: Mapping[str, Any]) -> int:
    return len(params.get("TransactItems") or [])


def cancelled(reasons: Sequence[Mapping[str, Any]]) -> Rejection:
    """DynamoDB's TransactionCanceledException for these CancellationReasons (request order)."""
    codes = ", ".join(str(r.get("Code", "None")) for r in reasons)
    return Rejection(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        400,
        {"CancellationReasons": [dict(r) for r in reasons]},
    )


def conflict_reasons(actions: int, conflicting: Sequence[int]) -> list[dict[str, str]]:
    """``TransactionConflict`` at the conflicting actions, ``None`` at the others."""
    return [
        {"Code": "TransactionConflict", "Message": ERRORS["TransactionConflict"][1]}
        if i in conflicting
        else {"Code": "None"}
        for i in range(actions)
    ]


def rejection(
    error: str, operation: str, params: Mapping[str, Any], *, item: int = 0, apply_first: bool = False
) -> Rejection:
    """The answer DynamoDB gives ``operation`` for ``error``, in DynamoDB's exact shape.

    ``TransactionConflict``: a transaction gets ``TransactionCanceledException`` whose
    CancellationReasons hold ``TransactionConflict`` at action ``item`` and ``None`` at the
    others; a single-item write gets ``TransactionConflictException``.
    """
    if error not in ERRORS:
        raise ValidationError(
            f"unknown error {error!r}{_did_you_mean(error, list(ERRORS))}; known errors: {', '.join(ERRORS)}"
        )
    status, message = ERRORS[error]
    if error == "TransactionConflict":
        if operation in ("TransactWriteItems", "TransactGetItems"):
            n = max(_actions(params), item + 1)
            return _replace(cancelled(conflict_reasons(n, [item])), apply_first)
        return Rejection("TransactionConflictException", CONFLICT_EXCEPTION_MESSAGE, 400, apply_first=apply_first)
    return Rejection(error, message, status, apply_first=apply_first)


def _replace(rej: Rejection, apply_first: bool) -> Rejection:
    return Rejection(rej.code, rej.message, rej.status, rej.extra, apply_first)


def error_body(rej: Rejection) -> bytes:
    """The JSON body DynamoDB sends for a rejection."""
    payload = {"__type": ERROR_PREFIX + rej.code, "message": rej.message, **rej.extra}
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


# ---------------------------------------------------------------- race-lab faults


@dataclass(frozen=True)
class Fault:
    """A fault on one call. Subclasses say what happens to that call."""

    #: what the history's ``injected`` column shows
    label: str = field(default="", init=False)

    def check(self, operation: str | None) -> None:
        """Refuse an operation this fault cannot apply to (None: not known before the run)."""


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
        if not isinstance(self.item, int) or self.item < 0:
            raise ValidationError(f"Conflict(item={self.item!r}): item is a 0-based action index")
        object.__setattr__(self, "label", "transaction-conflict")


@dataclass(frozen=True)
class Throttle(Fault):
    """Answered without writing: ProvisionedThroughputExceededException (or ThrottlingException...)."""

    code: str = "ProvisionedThroughputExceededException"

    def __post_init__(self) -> None:
        throttles = ("ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded")
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
}
_SPEC = re.compile(r"^\s*(?P<actor>[^\s:]+?)(?P<n>\d+)\s*:\s*(?P<name>[a-z-]+)(?:\((?P<arg>\d+)\))?\s*$")

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
                    f"{_did_you_mean(name, list(FAULT_NAMES))}; "
                    f"known faults: {', '.join(FAULT_NAMES)}"
                )
            fault = (
                Conflict(int(match["arg"])) if match["arg"] and name == "transaction-conflict" else FAULT_NAMES[name]()
            )
            if match["arg"] and name != "transaction-conflict":
                raise ValidationError(
                    f"{text!r}: only transaction-conflict takes an argument (the 0-based action index)"
                )
            entries.append((match["actor"], int(match["n"]), fault))
    for actor, n, fault in entries:
        if actor not in actors:
            raise ValidationError(f"a fault names actor {actor!r}, which is not one of {names}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValidationError(
                f"fault on {actor!r}: call number {n!r} must be an int >= 1 (1 = the actor's first DynamoDB call)"
            )
        if not isinstance(fault, Fault):
            raise ValidationError(
                f"fault on {actor}{n} is {fault!r}, not a labkit.faults.Fault "
                "(LoseResponse(), Conflict(), Throttle(), ServerError(), Hold())"
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


class _Raw:
    """The raw stream botocore reads a canned response from."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def canned_response(url: str, rej: Rejection) -> AWSResponse:
    """What DynamoDB's HTTP answer for ``rej`` looks like to botocore (headers checked by it)."""
    body = error_body(rej)
    headers = {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-crc32": str(binascii.crc32(body)),
        "x-amzn-requestid": f"labkit-fault-{next(_ids):08d}",
        "content-length": str(len(body)),
    }
    return AWSResponse(url, rej.status, HTTPHeaders.from_dict(headers), _Raw(body))


_ids = itertools.count(1)
_CALL = "labkit_call"  # the race lab's per-call record (labkit.races)
_FAULT = "labkit_fault"


class FaultPlan:
    """Race-lab faults installed on gated clients. Made by :func:`plan_for`; close() when done."""

    def __init__(self, plan: Mapping[str, Mapping[int, Fault]]) -> None:
        self.plan = {a: dict(c) for a, c in plan.items()}
        self.fired: list[tuple[str, int, str]] = []
        self._calls: dict[str, int] = {}
        self._held: list[tuple[str, str]] = []  # (endpoint url, token) to release at close
        self._installed: list[tuple[Any, str, Callable[..., Any]]] = []
        self._lock = threading.Lock()

    def install(self, probes: Mapping[str, Any]) -> FaultPlan:
        """Hook each actor's client (``probes[actor].client``; ``.session`` is the race session)."""
        for actor, probe in probes.items():
            if actor not in self.plan:
                continue
            events = probe.client.meta.events

            def count(context: dict[str, Any], actor: str = actor, **_: Any) -> None:
                with self._lock:
                    n = self._calls[actor] = self._calls.get(actor, 0) + 1
                fault = self.plan[actor].get(n)
                if fault is not None:
                    context[_FAULT] = (actor, n, fault)
                    if isinstance(context.get(_CALL), dict):
                        context[_CALL]["injected"] = fault.label

            def send(request: Any, probe: Any = probe, **_: Any) -> Any:
                found = (request.context or {}).get(_FAULT)
                if found is None:
                    return None
                return self._act(probe, request, *found)

            events.register("before-call.dynamodb", count)
            events.register("before-send.dynamodb", send)
            self._installed += [(events, "before-call.dynamodb", count), (events, "before-send.dynamodb", send)]
        return self

    def _act(self, probe: Any, request: Any, actor: str, n: int, fault: Fault) -> Any:
        request.context.pop(_FAULT, None)  # once per call: a botocore retry goes through
        operation = request.context.get(_CALL, {}).get("operation") or _target(request)
        params = _body(request)
        self.fired.append((actor, n, fault.label))
        if isinstance(fault, LoseResponse):
            _send(probe.client, request)
            lost: Exception = (
                ConnectionClosedError(endpoint_url=request.url)
                if fault.error == "connection-closed"
                else ReadTimeoutError(endpoint_url=request.url)
            )
            lost.labkit_fault = fault.label  # type: ignore[attr-defined]  # an outcome, not a bug
            raise lost
        if isinstance(fault, Conflict):
            return canned_response(request.url, rejection("TransactionConflict", operation, params, item=fault.item))
        if isinstance(fault, Throttle):
            return canned_response(request.url, rejection(fault.code, operation, params))
        if isinstance(fault, ServerError):
            if fault.applied:
                _send(probe.client, request)
            return canned_response(request.url, rejection("InternalServerError", operation, params))
        if isinstance(fault, Hold):
            return self._hold(probe, request, actor, operation, params)
        raise RaceError(f"fault {fault!r} on {actor}{n} has no implementation")  # pragma: no cover

    def _hold(self, probe: Any, request: Any, actor: str, operation: str, params: Mapping[str, Any]) -> None:
        token = params.get("ClientRequestToken")
        if operation != "TransactWriteItems" or not token:
            raise RaceError(
                f"hold on {actor}: only a TransactWriteItems can be held in flight, "
                f"and this call is {operation}; move the fault to that call"
            )
        url = request.url
        control(url, "HoldTransaction", {"ClientRequestToken": token})
        self._held.append((url, str(token)))
        answer = _send(probe.client, request)  # the real request: the endpoint locks its items
        if _HELD not in answer.text:
            raise RaceError(
                f"hold on {actor}: the endpoint did not hold the transaction "
                f"({answer.status_code}: {answer.text[:200]})"
            )
        session, call = probe.session, request.context.get(_CALL)
        if session is not None and isinstance(call, dict) and "start" in call:
            prepared = {**call, "outcome": "held", "retries": 0, "injected": "hold"}
            session.after(actor, prepared)  # the prepare turn is done; others may go
            for k in ("start", "turn", "end"):
                call.pop(k, None)
            call["injected"] = "commit"
            session.before(actor, call)  # wait for the actor's next turn: the commit
        return None  # botocore now sends the request for real: the commit

    def close(self) -> None:
        """Unhook the clients and release transactions still held (an aborted run)."""
        for events, name, handler in self._installed:
            events.unregister(name, handler)
        self._installed.clear()
        for url, token in self._held:
            with contextlib.suppress(Exception):
                control(url, "ReleaseTransaction", {"ClientRequestToken": token})
        self._held.clear()


def plan_for(spec: FaultSpec | None, order: Sequence[str], actors: Sequence[str]) -> FaultPlan:
    """Parse and check ``faults=`` against the order, before anything runs."""
    plan = parse_faults(spec, list(actors))
    check_order(plan, order)
    return FaultPlan(plan)


@dataclass
class _Lone:
    client: Any
    session: Any = None


def inject(client: Any, faults: Mapping[int, Fault] | Sequence[str]) -> FaultPlan:
    """Faults on one client's calls outside the race lab: ``inject(c, ["1: lose-response"])``.

    The client keeps its own retry settings, so botocore's retries meet the fault as they
    would meet DynamoDB's answer. Call ``close()`` on the result to remove the faults.
    """
    spec: FaultSpec = {"client": faults} if isinstance(faults, Mapping) else [f"client{f}" for f in faults]
    plan = parse_faults(spec, ["client"])
    if any(isinstance(f, Hold) for f in plan.get("client", {}).values()):
        raise ValidationError(
            "a hold needs turns to hold the transaction across: use it in "
            "run_interleaving(..., faults=['A1: hold']), not inject()"
        )
    return FaultPlan(plan).install({"client": _Lone(client)})


def _target(request: Any) -> str:
    return str(request.headers.get("X-Amz-Target", b"") or "").rpartition(".")[2]


def _body(request: Any) -> dict[str, Any]:
    body = request.body
    if hasattr(body, "read"):
        body = body.read()
        request.reset_stream()
    try:
        params = json.loads(body or b"{}")
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _send(client: Any, request: Any) -> Any:
    """Send the prepared request for real, with the client's own HTTP session."""
    answer = client._endpoint.http_session.send(request)
    _ = answer.content
    return answer


# ---------------------------------------------------------------- endpoint rules


_RULE_FIELDS = ("operation", "table", "key", "error", "probability", "count", "apply_first", "item")


@dataclass(frozen=True)
class FaultRule:
    """One endpoint rule: which requests (operation, table, partition key) get which error."""

    operation: str
    error: str
    table: str | None = None
    key: str | None = None
    probability: float = 1.0
    count: int | None = None
    apply_first: bool = False
    item: int = 0

    def __post_init__(self) -> None:
        where = f"fault rule {self.as_dict()}"
        if self.operation != "*" and self.operation not in OPERATIONS:
            raise ValidationError(
                f"{where}: unknown operation {self.operation!r}"
                f"{_did_you_mean(self.operation, OPERATIONS)}; use '*' or one of "
                f"{', '.join(OPERATIONS)}"
            )
        if self.error not in ERRORS:
            raise ValidationError(
                f"{where}: unknown error {self.error!r}"
                f"{_did_you_mean(self.error, list(ERRORS))}; use one of "
                f"{', '.join(ERRORS)}"
            )
        if self.error == "TransactionConflict" and self.operation not in ("*", *CONFLICTABLE):
            raise ValidationError(
                f"{where}: DynamoDB never answers {self.operation} with a "
                f"transaction conflict; use it on {', '.join(CONFLICTABLE)}"
            )
        p = self.probability
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise ValidationError(f"{where}: probability {p!r} must be a number from 0 to 1")
        if self.count is not None and (
            isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1
        ):
            raise ValidationError(f"{where}: count {self.count!r} must be an int >= 1 (or omitted: no limit)")
        if not isinstance(self.apply_first, bool):
            raise ValidationError(f"{where}: apply_first must be true or false")
        for name in ("table", "key"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValidationError(f"{where}: {name} must be a non-empty string")

    def as_dict(self) -> dict[str, Any]:
        """The rule as in a faults file (defaults left out)."""
        out: dict[str, Any] = {"operation": self.operation, "error": self.error}
        for name, default in (
            ("table", None),
            ("key", None),
            ("probability", 1.0),
            ("count", None),
            ("apply_first", False),
            ("item", 0),
        ):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out

    def matches(self, request: RequestInfo) -> bool:
        if self.operation not in ("*", request.operation):
            return False
        if self.error == "TransactionConflict" and request.operation not in CONFLICTABLE:
            return False
        touched = request.writes + request.reads
        if self.table is not None and all(t != self.table for t, _ in touched):
            return False
        return self.key is None or any(k == self.key and (self.table is None or t == self.table) for t, k in touched)


@dataclass(frozen=True)
class FaultRules:
    """A seeded set of rules; the first matching rule that fires wins."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0

    @classmethod
    def parse(cls, data: Any, source: str = "faults") -> FaultRules:
        """From the JSON shape (``{"seed": 7, "rules": [...]}`` or a bare list of rules)."""
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, Mapping):
            raise ValidationError(
                f'{source}: expected an object {{"seed": 7, "rules": [...]}} '
                f"or a list of rules, not {type(data).__name__}"
            )
        unknown = sorted(set(data) - {"seed", "rules"})
        if unknown:
            raise ValidationError(f"{source}: unknown field(s) {', '.join(unknown)}; use 'seed' and 'rules'")
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValidationError(f"{source}: seed {seed!r} must be an int")
        raw = data.get("rules", [])
        if not isinstance(raw, list):
            raise ValidationError(f"{source}: 'rules' must be a list")
        rules = []
        for i, entry in enumerate(raw):
            if not isinstance(entry, Mapping):
                raise ValidationError(f"{source}: rule {i} must be an object")
            bad = sorted(set(entry) - set(_RULE_FIELDS))
            if bad:
                raise ValidationError(
                    f"{source}: rule {i} has unknown field(s) {', '.join(bad)}; fields are {', '.join(_RULE_FIELDS)}"
                )
            missing = [f for f in ("operation", "error") if f not in entry]
            if missing:
                raise ValidationError(f"{source}: rule {i} needs {' and '.join(missing)}")
            try:
                rules.append(FaultRule(**dict(entry)))
            except ValidationError as exc:
                raise ValidationError(f"{source}: rule {i}: {exc}") from None
        return cls(tuple(rules), seed)

    def as_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "rules": [r.as_dict() for r in self.rules]}


def load_rules(path: str | Path) -> FaultRules:
    """Read and check a faults file (JSON, see the module docstring); errors name the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read faults file {source}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(
            f"faults file {source} is not valid JSON ({exc}); see `labkit.faults` for the format"
        ) from exc
    return FaultRules.parse(data, f"faults file {source}")


@dataclass
class _Held:
    token: str
    locks: frozenset[tuple[str, str]] = frozenset()
    prepared: bool = False


class FaultInjector:
    """The engine hook: rejects requests by rule, and holds transactions in flight.

    Called under the engine's lock. ``log`` records every injected fault (newest last).
    """

    LOG_SIZE = 1000

    def __init__(self, rules: FaultRules | None = None) -> None:
        self.rules = rules or FaultRules()
        self.fired: list[int] = [0] * len(self.rules.rules)
        self.rng = random.Random(self.rules.seed)
        self.holds: dict[str, _Held] = {}
        self.log: list[dict[str, Any]] = []

    def set_rules(self, rules: FaultRules) -> None:
        """Replace the rules; the seed and counts start over."""
        self.rules = rules
        self.fired = [0] * len(rules.rules)
        self.rng = random.Random(rules.seed)

    def _record(self, request: RequestInfo, rej: Rejection, why: str, now: float) -> Rejection:
        self.log.append(
            {
                "now": now,
                "operation": request.operation,
                "error": rej.code,
                "status": rej.status,
                "applied": rej.apply_first,
                "why": why,
                "keys": [list(k) for k in request.writes + request.reads],
            }
        )
        del self.log[: -self.LOG_SIZE]
        return rej

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        held = self._in_flight(request, now)
        if held is not None:
            return held
        for i, rule in enumerate(self.rules.rules):
            if rule.count is not None and self.fired[i] >= rule.count:
                continue
            if not rule.matches(request):
                continue
            if rule.probability < 1 and self.rng.random() >= rule.probability:
                continue
            self.fired[i] += 1
            rej = rejection(rule.error, request.operation, request.params, item=rule.item, apply_first=rule.apply_first)
            return self._record(request, rej, f"rule {i}", now)
        return None

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        """Nothing to meter: faults act before a request applies."""

    # --- transactions in flight

    def _in_flight(self, request: RequestInfo, now: float) -> Rejection | None:
        token = request.params.get("ClientRequestToken") if request.operation == "TransactWriteItems" else None
        mine = self.holds.get(str(token)) if token else None
        if mine is not None and not mine.prepared:  # the prepare: lock its items, write nothing
            mine.locks = frozenset(request.writes + request.reads)
            mine.prepared = True
            return Rejection(_HELD, f"transaction {token} is held in flight by labkit's race lab", 409)
        if mine is not None:  # the commit: release and apply
            del self.holds[mine.token]
            return None
        locked = frozenset().union(*(h.locks for h in self.holds.values())) if self.holds else frozenset()
        if not locked or request.operation not in CONFLICTABLE:
            return None
        touched = set(request.writes)
        if request.operation in ("TransactWriteItems", "TransactGetItems"):
            touched |= set(request.reads)
        hit = touched & locked
        if not hit:
            return None
        if request.operation in ("TransactWriteItems", "TransactGetItems"):
            actions = request.params.get("TransactItems") or []
            at = [i for i, a in enumerate(actions) if _action_touches(a, hit)] or [0]
            rej = cancelled(conflict_reasons(len(actions), at))
        else:
            rej = Rejection("TransactionConflictException", CONFLICT_EXCEPTION_MESSAGE, 400)
        return self._record(request, rej, "transaction in flight", now)


def canonical(value: Any) -> str:
    """A partition key value as the canonical string the engine reports (S/N as is, B base64)."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((_, raw),) = value.items()
        return str(raw)
    return str(value)


def _action_touches(action: Mapping[str, Any], keys: set[tuple[str, str]]) -> bool:
    """Does this TransactItems action name one of ``keys``? (its Key's or Item's values)."""
    for body in action.values():
        if not isinstance(body, Mapping):
            continue
        attrs = body.get("Key") or body.get("Item") or {}
        table = body.get("TableName")
        if any((table, canonical(v)) in keys for v in attrs.values()):
            return True
    return False


# ---------------------------------------------------------------- control operations

#: ``X-Amz-Target: Labkit.<name>`` operations the embedded endpoint answers (loopback only).
CONTROL_OPERATIONS = ("SetFaults", "GetFaults", "HoldTransaction", "ReleaseTransaction", "AdvanceClock")


def injector_of(engine: Any) -> FaultInjector:
    """The engine's FaultInjector, added as a hook on first use."""
    for hook in getattr(engine, "hooks", []):
        if isinstance(hook, FaultInjector):
            return hook
    injector = FaultInjector()
    engine.add_hook(injector)
    return injector


class _ShiftedClock:
    def __init__(self, base: Callable[[], float], offset: float) -> None:
        self.base, self.offset = base, offset

    def __call__(self) -> float:
        return self.base() + self.offset


def handle_control(engine: Any, operation: str, params: Mapping[str, Any] | None) -> tuple[int, dict[str, Any]]:
    """Answer a ``Labkit.*`` control request: (HTTP status, JSON payload). Runs under the engine lock."""

    def bad(message: str) -> tuple[int, dict[str, Any]]:
        return 400, {"__type": ERROR_PREFIX + "ValidationException", "message": message}

    if params is None:
        return bad("the request body must be a JSON object")
    if operation not in CONTROL_OPERATIONS:
        return bad(
            f"unknown labkit control operation {operation!r}; use one of "
            f"{', '.join('Labkit.' + o for o in CONTROL_OPERATIONS)}"
        )
    injector = injector_of(engine)
    if operation == "SetFaults":
        try:
            injector.set_rules(FaultRules.parse(params, "Labkit.SetFaults"))
        except ValidationError as exc:
            return bad(str(exc))
        return 200, {"Rules": len(injector.rules.rules)}
    if operation == "GetFaults":
        return 200, {
            **injector.rules.as_dict(),
            "Fired": list(injector.fired),
            "Log": list(injector.log),
            "Held": sorted(injector.holds),
        }
    if operation in ("HoldTransaction", "ReleaseTransaction"):
        token = params.get("ClientRequestToken")
        if not isinstance(token, str) or not token:
            return bad(f"Labkit.{operation} needs a ClientRequestToken")
        if operation == "HoldTransaction":
            injector.holds[token] = _Held(token)
        else:
            injector.holds.pop(token, None)
        return 200, {"Held": sorted(injector.holds)}
    seconds = params.get("Seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return bad("Labkit.AdvanceClock needs Seconds, a number >= 0")
    tokens = engine.tokens
    clock = tokens.clock
    if isinstance(clock, _ShiftedClock):
        clock.offset += seconds
    else:
        tokens.clock = _ShiftedClock(clock, float(seconds))
    return 200, {"Advanced": tokens.clock.offset}


def control(url: str, operation: str, payload: Mapping[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """POST one ``Labkit.<operation>`` control request to the embedded endpoint at ``url``."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode("utf-8"),
        method="POST",
        headers={"X-Amz-Target": f"Labkit.{operation}", "Content-Type": "application/x-amz-json-1.0"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310  loopback
            return dict(json.loads(answer.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read() or b"{}")
        raise ValidationError(str(body.get("message") or body)) from None


def _endpoint(conn: Connection) -> str:
    if conn.backend != "embedded" or not conn.endpoint_url:
        raise ConfigurationError(
            f"endpoint faults need labkit's embedded endpoint, and this connection is "
            f"{conn.backend!r}; on DynamoDB Local or AWS use the race lab's per-call faults "
            "(run_interleaving(..., faults=[...])), which act in the client"
        )
    return conn.endpoint_url


def set_endpoint_faults(
    conn: Connection,
    rules: FaultRules | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None,
) -> FaultRules:
    """Switch the endpoint's fault rules (None or [] switches them off); checked here first."""
    parsed = rules if isinstance(rules, FaultRules) else FaultRules.parse(rules or [], "rules")
    control(_endpoint(conn), "SetFaults", parsed.as_dict())
    return parsed


@contextlib.contextmanager
def endpoint_faults(
    conn: Connection,
    rules: FaultRules | Sequence[Mapping[str, Any]] | Mapping[str, Any],
) -> Iterator[FaultRules]:
    """``with endpoint_faults(conn, [...]):`` — the rules hold inside the block only."""
    parsed = set_endpoint_faults(conn, rules)
    try:
        yield parsed
    finally:
        set_endpoint_faults(conn, None)


def endpoint_fault_log(conn: Connection) -> list[dict[str, Any]]:
    """Faults the endpoint injected (oldest first): operation, error, status, applied, keys."""
    return list(control(_endpoint(conn), "GetFaults", {})["Log"])


def advance_token_clock(conn: Connection, seconds: float) -> float:
    """Move the endpoint's ClientRequestToken clock forward (e.g. past DynamoDB's 10 minutes)."""
    return float(control(_endpoint(conn), "AdvanceClock", {"Seconds": seconds})["Advanced"])


__all__ = [
    "CONTROL_OPERATIONS",
    "ERRORS",
    "FAULT_NAMES",
    "OPERATIONS",
    "Conflict",
    "Fault",
    "FaultInjector",
    "FaultPlan",
    "FaultRule",
    "FaultRules",
    "Hold",
    "LoseResponse",
    "ServerError",
    "Throttle",
    "advance_token_clock",
    "canned_response",
    "endpoint_fault_log",
    "endpoint_faults",
    "handle_control",
    "inject",
    "load_rules",
    "parse_faults",
    "plan_for",
    "rejection",
    "set_endpoint_faults",
]
