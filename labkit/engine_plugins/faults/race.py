"""Race-lab faults at work: each lands on an actor's N-th call inside botocore's send loop.

A fault answers from ``before-send`` (a canned response in DynamoDB's exact shape, which
botocore handles as it would DynamoDB's), or sends the real request first and then loses the
answer, or holds a transaction in flight across turns (through the endpoint's control
operations). :func:`plan_for` is what ``run_interleaving(..., faults=...)`` calls; :func:`inject`
puts faults on one client outside the race lab.
"""

from __future__ import annotations

import binascii
import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from ...shared.catalogue import WEAK_ANSWER_HEADER, WEAK_ANSWER_NONE, Op
from ...shared.constants import JSON_CONTENT_TYPE
from ...shared.engine_hooks import Rejection
from ...shared.errors import ConfigurationError, RaceError, ValidationError
from ...shared.intercept import CALL, CallRecord
from .answers import HELD, error_body, rejection
from .control import control
from .kinds import (
    Conflict,
    Fault,
    FaultSpec,
    Hold,
    LoseResponse,
    ServerError,
    Throttle,
    TtlDelete,
    WeakAnswerFault,
    call_point,
    check_order,
    parse_faults,
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
        "content-type": JSON_CONTENT_TYPE,
        "x-amz-crc32": str(binascii.crc32(body)),
        "x-amzn-requestid": f"labkit-fault-{next(_ids):08d}",
        "content-length": str(len(body)),
    }
    return AWSResponse(url, rej.status, HTTPHeaders.from_dict(headers), _Raw(body))


_ids = itertools.count(1)
_FAULT = "labkit_fault"


def _record(context: Mapping[str, Any] | None) -> CallRecord | None:
    """The race lab's record of the call whose request context this is (None: an unbound call)."""
    found = (context or {}).get(CALL)
    return found if isinstance(found, CallRecord) else None


class FaultPlan:
    """Race-lab faults for one run. Made by :func:`plan_for`; close() when done.

    The race lab's handlers (:mod:`labkit.shared.intercept`) call :meth:`mark` as each of an
    actor's calls gets its turn (any client the actor uses) and :meth:`send` as botocore is about
    to send it; :func:`inject` hooks one client's events with the same two methods.
    """

    def __init__(self, plan: Mapping[str, Mapping[int, Fault]], where_possible: bool = False) -> None:
        self.plan = {a: dict(c) for a, c in plan.items()}
        #: explore's plans: a fault whose call is, in this order, one DynamoDB cannot answer with it
        #: (data-dependent code makes another call there) is not given, and the call goes as it is
        self.where_possible = where_possible
        self.fired: list[tuple[str, int, str]] = []
        #: turns a weak answer's view, named by the run's writes (``index misses A1``), into the engine's form
        #: as the read goes out: (the fault, the read, every call of the run before it) -> the header, or None
        #: when this order has not made those writes (set by the race lab: :class:`labkit.races.views.Resolver`)
        self.resolver: Callable[[WeakAnswerFault, CallRecord, Sequence[CallRecord]], str | None] | None = None
        self.records: list[CallRecord] = []  # the run's calls so far, in turn order (what a view is named by)
        self._calls: dict[str, int] = {}
        self._held: list[tuple[str, str]] = []  # (endpoint url, token) to release at close
        self._installed: list[tuple[Any, str, Callable[..., Any]]] = []
        self._lock = threading.Lock()

    def weak_labels(self) -> tuple[str, ...]:
        """The weak answers planned (``("stale-read",)``): they need labkit's embedded endpoint."""
        found = (f.label for calls in self.plan.values() for f in calls.values() if isinstance(f, WeakAnswerFault))
        return tuple(dict.fromkeys(found))

    def embedded_labels(self) -> tuple[str, ...]:
        """The faults planned that only labkit's embedded endpoint gives: the weak answers, ``ttl-delete``."""
        ttl = any(isinstance(f, TtlDelete) for calls in self.plan.values() for f in calls.values())
        return (*self.weak_labels(), *((TtlDelete().label,) if ttl else ()))

    def mark(self, actor: str, context: dict[str, Any]) -> None:
        """Count ``actor``'s call; if a fault is planned on it, mark the call's request context."""
        call = _record(context)
        before = list(self.records)
        if call is not None:
            with self._lock:
                self.records.append(call)
        if actor not in self.plan:
            return
        with self._lock:
            n = self._calls[actor] = self._calls.get(actor, 0) + 1
        fault = self.plan[actor].get(n)
        if fault is None:
            return
        possible = call is None or fault.gives(call.operation, call.params)
        header = None
        if possible and isinstance(fault, WeakAnswerFault) and fault.view is not None and call is not None:
            header = None if self.resolver is None else self.resolver(fault, call, before)
            possible = header is not None
        if self.where_possible and not possible:
            return  # in this order the call is one DynamoDB never answers with it (that view): not given
        context[_FAULT] = (actor, n, fault, header)
        if call is not None:
            call.injected = fault.named if isinstance(fault, WeakAnswerFault) else fault.label

    def send(self, actor: str, client: Any, session: Any, request: Any) -> Any:
        """As botocore sends a marked call (its first attempt): the fault acts; else None."""
        found = (request.context or {}).get(_FAULT)
        if found is None or client is None:
            return None
        return self._act(client, session, request, *found)

    def install(self, clients: Mapping[str, Any]) -> FaultPlan:
        """Hook each actor's own client (``clients[actor]``) directly: :func:`inject`'s way, no race lab."""
        for actor, client in clients.items():
            if actor not in self.plan:
                continue
            events = client.meta.events

            def count(context: dict[str, Any], actor: str = actor, **_: Any) -> None:
                self.mark(actor, context)

            def send(request: Any, actor: str = actor, client: Any = client, **_: Any) -> Any:
                return self.send(actor, client, None, request)

            events.register("before-call.dynamodb", count)
            events.register("before-send.dynamodb", send)
            self._installed += [(events, "before-call.dynamodb", count), (events, "before-send.dynamodb", send)]
        return self

    def _act(
        self, client: Any, session: Any, request: Any, actor: str, n: int, fault: Fault, header: str | None
    ) -> Any:
        request.context.pop(_FAULT, None)  # once per call: a botocore retry goes through
        call = _record(request.context)
        operation = call.operation if call is not None else _target(request)
        params = _body(request)
        if isinstance(fault, WeakAnswerFault):
            return self._weak(client, session, request, actor, n, fault, operation, params, header)
        if isinstance(fault, TtlDelete):
            return self._ttl_delete(session, request, actor, n, fault)
        self.fired.append((actor, n, fault.label))
        if isinstance(fault, LoseResponse):
            _send(client, request)
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
                _send(client, request)
            return canned_response(request.url, rejection("InternalServerError", operation, params))
        if isinstance(fault, Hold):
            return self._hold(client, session, request, actor, operation, params)
        raise RaceError(f"fault {fault!r} on {actor}{n} has no implementation")  # pragma: no cover

    def _weak(
        self,
        client: Any,
        session: Any,
        request: Any,
        actor: str,
        n: int,
        fault: WeakAnswerFault,
        operation: str,
        params: Mapping[str, Any],
        header: str | None = None,
    ) -> Any:
        """The real request with the weak-answer directive; the endpoint's echo goes into the history."""
        reason = fault.refusal(operation, params)
        if reason is None and fault.view is not None and header is None:
            lab = "" if self.resolver is not None else " (views are named by run_interleaving and explore)"
            reason = f"in this order the view names writes the run has not made, or none this {operation} reads{lab}"
        if reason is not None:
            error = ValidationError(
                f"{fault.named} on {call_point(actor, n)}: {reason}. Nothing was sent: move the fault to such a call"
            )
            if session is not None:
                session.refuse(error)  # ends the run (raises)
            raise error
        self.fired.append((actor, n, fault.label))
        request.headers[WEAK_ANSWER_HEADER] = header or fault.label
        try:
            answer = _send(client, request)
        finally:
            del request.headers[WEAK_ANSWER_HEADER]  # a botocore retry is an ordinary request
        echo = answer.headers.get(WEAK_ANSWER_HEADER)
        refused = _directive_refused(answer)
        if refused is not None:  # the endpoint's 400 on the directive itself (e.g. profile dynamodb-local)
            said = ValidationError(f"{fault.label} on {call_point(actor, n)}: the endpoint refused it: {refused}")
            if session is not None:
                session.refuse(said)
            raise said
        if echo is None and answer.status_code < 300:  # answered, and the directive not seen: not labkit's engine
            unseen = ConfigurationError(
                f"{fault.label} on {call_point(actor, n)}: the endpoint at {request.url} answered without "
                f"{WEAK_ANSWER_HEADER}, so it gives no weak answers (labkit's embedded endpoint, profile "
                "labkit, does); run this on it, or leave the fault out"
            )
            if session is not None:
                session.refuse(unseen)
            raise unseen
        call = _record(request.context)
        if call is not None and echo and echo.startswith(WEAK_ANSWER_NONE):  # it could not differ
            call.injected = f"{fault.named} ({echo})"
        return answer

    def _ttl_delete(self, session: Any, request: Any, actor: str, n: int, fault: TtlDelete) -> None:
        """DynamoDB's TTL process, run now on the call's endpoint; the call is then sent as usual."""
        try:
            deleted = control(request.url, Op.EXPIRE_ITEMS, {})
        except ConfigurationError as exc:  # not labkit's embedded endpoint with its defaults
            said = ConfigurationError(f"{fault.label} on {call_point(actor, n)}: {exc}")
            if session is not None:
                session.refuse(said)
            raise said from None
        self.fired.append((actor, n, fault.label))
        call = _record(request.context)
        if call is not None and not deleted.get("Count"):
            call.injected = f"{fault.label} (none: no item was expired)"
        return None  # botocore sends the call itself

    def _hold(
        self, client: Any, session: Any, request: Any, actor: str, operation: str, params: Mapping[str, Any]
    ) -> None:
        token = params.get("ClientRequestToken")
        if operation != Op.TRANSACT_WRITE_ITEMS or not token:
            raise RaceError(
                f"hold on {actor}: only a TransactWriteItems can be held in flight, "
                f"and this call is {operation}; move the fault to that call"
            )
        url = request.url
        control(url, Op.HOLD_TRANSACTION, {"ClientRequestToken": token})
        self._held.append((url, str(token)))
        answer = _send(client, request)  # the real request: the endpoint locks its items
        if HELD not in answer.text:
            raise RaceError(
                f"hold on {actor}: the endpoint did not hold the transaction "
                f"({answer.status_code}: {answer.text[:200]})"
            )
        call = _record(request.context)
        if session is not None and call is not None and call.sent:
            session.hold(actor, call, "held")  # the prepare turn is done; wait for the actor's next: the commit
            call.injected = "commit"
        return None  # botocore now sends the request for real: the commit

    def close(self) -> None:
        """Unhook the clients and release transactions still held (an aborted run)."""
        for events, name, handler in self._installed:
            events.unregister(name, handler)
        self._installed.clear()
        for url, token in self._held:
            with contextlib.suppress(Exception):
                control(url, Op.RELEASE_TRANSACTION, {"ClientRequestToken": token})
        self._held.clear()


def plan_for(spec: FaultSpec | None, order: Sequence[str], actors: Sequence[str]) -> FaultPlan:
    """Parse and check ``faults=`` against the order, before anything runs."""
    plan = parse_faults(spec, list(actors))
    check_order(plan, order)
    return FaultPlan(plan)


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
    return FaultPlan(plan).install({"client": client})


def _target(request: Any) -> str:
    """The operation a request calls, from its ``X-Amz-Target`` header (botocore keeps it as bytes)."""
    target = request.headers.get("X-Amz-Target", b"") or b""
    text = target.decode("ascii") if isinstance(target, bytes) else str(target)
    return text.rpartition(".")[2]


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


def _directive_refused(answer: Any) -> str | None:
    """The endpoint's message when it refused the weak-answer directive (a 400 that names the header), else None."""
    if answer.status_code != 400:
        return None
    try:
        message = str(json.loads(answer.content or b"{}").get("message") or "")
    except (ValueError, AttributeError):
        return None
    return message if message.startswith(WEAK_ANSWER_HEADER) else None


def _send(client: Any, request: Any) -> Any:
    """Send the prepared request for real, with the client's own HTTP session."""
    answer = client._endpoint.http_session.send(request)
    _ = answer.content
    return answer
