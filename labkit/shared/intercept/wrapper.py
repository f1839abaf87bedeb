"""botocore's client call, wrapped once per process: the race lab's handlers on each client, and observers.

The race lab gates *every* DynamoDB call an actor makes, whatever made it: a ``boto3.client``, a
``boto3.resource(...).Table(...)``, a PynamoDB ``Model``, a client created at import time. They
all end in :meth:`botocore.client.BaseClient._make_api_call` (PynamoDB calls it directly; boto3's
resources serialise their Python values in a ``before-parameter-build`` handler of the same
client), so :func:`install` wraps that method once, for the whole process (idempotent). The wrapper
is a no-op on a thread bound to no actor. On a bound thread, the first sight of a client attaches
the race lab's handlers to that client's own event emitter (``before-parameter-build``,
``before-call``, ``after-call``, ``after-call-error``, ``before-send``); they read the binding of
the calling thread, so one client shared by several actors still records each call under the
actor whose thread made it. Like moto's ``mock_aws`` (a ``before-send`` handler on every client),
and unlike a wrapper per library.

What cannot be gated is refused, never let through: a client whose endpoint is not the lab's
(nothing is sent), an aiobotocore/aioboto3 call (its ``AioBaseClient`` overrides the method;
guarded once ``aiobotocore`` is imported), a DynamoDB request sent on a bound thread that never
passed the wrapper, and a call from a thread an actor started that outlives its run.
:class:`Observer` objects (the pytest plugin's) also see every DynamoDB call of the process, and a
*reroute* (:func:`add_reroute`, :mod:`labkit.shared.routing`'s) tells the endpoint check where a client's
calls really go when they are sent somewhere else than the client's own endpoint.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from botocore.client import BaseClient
from botocore.httpsession import URLLib3Session

from ..catalogue import Op
from ..constants import REPLICATIONS_HEADER
from ..errors import RaceError
from .bindings import Binding, current
from .record import CALL, CallRecord
from .subactors import patch_threading

_SERVICE = "dynamodb"
_TARGET = "DynamoDB_20120810."
_REPLICATIONS = REPLICATIONS_HEADER.lower()  # botocore lower-cases the answer's header names


class Observer(Protocol):
    """Sees every DynamoDB call of the process, bound or not (the pytest plugin's table tracker)."""

    def before(self, client: Any, operation: str) -> None:
        """Before the call; may raise to refuse it (nothing is sent)."""

    def after(self, client: Any, operation: str, params: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """After the call returned ``result``."""


#: clients whose events carry the race lab's handlers -> their endpoint (endpoint_key form)
_attached: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
#: the call each thread has in flight (its turn granted, its answer not yet in)
_open: dict[int, CallRecord] = {}
_observers: list[Observer] = []
#: functions of a client: the endpoint (endpoint_key form) its calls are rerouted to, or None
_reroutes: list[Callable[[Any], str | None]] = []
_install_lock = threading.Lock()
#: held while a client's handlers are attached: botocore's ``unique_id`` check is not atomic, so two
#: threads meeting a new client at once (an actor's pool tasks) could both register a handler, and
#: every call of the operation registered twice would be recorded twice
_attach_lock = threading.Lock()
_installed = False
_async_guarded = False


def add_observer(observer: Observer) -> None:
    install()
    if observer not in _observers:
        _observers.append(observer)


def remove_observer(observer: Observer) -> None:
    with contextlib.suppress(ValueError):
        _observers.remove(observer)


def add_reroute(reroute: Callable[[Any], str | None]) -> None:
    """Tell the endpoint check where calls go that ``reroute`` sends elsewhere (None: not rerouted)."""
    install()
    if reroute not in _reroutes:
        _reroutes.append(reroute)


def reached(client: Any) -> str | None:
    """The endpoint a client's calls reach now (endpoint_key form): rerouted, or the client's own."""
    for reroute in list(_reroutes):
        url = reroute(client)
        if url is not None:
            return url
    return endpoint_key(client.meta.endpoint_url)


def endpoint_key(url: str | None) -> str | None:
    """``http://localhost:8000/`` -> ``http://127.0.0.1:8000``: the form endpoints are compared in."""
    if not url:
        return None
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "localhost":
        host = "127.0.0.1"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    return f"{parts.scheme.lower()}://{host}:{port}"


# ---------------------------------------------------------------- the handlers on a client


def _on_params(params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    if current() is not None:
        context[CALL] = CallRecord(model.name, params, context.get("client_region"))


def _on_before_call(context: dict[str, Any], **_: Any) -> None:
    binding, call = current(), context.get(CALL)
    if binding is None or call is None:
        return
    binding.session.before(binding.actor, call)  # waits for the actor's turn (may raise Aborted)
    _open[threading.get_ident()] = call
    if binding.plan is not None:
        binding.plan.mark(binding.actor, context)


def _finish(context: Mapping[str, Any], outcome: str, retries: int) -> None:
    binding, call = current(), context.get(CALL)
    if binding is None or call is None or not call.sent:
        return
    _open.pop(threading.get_ident(), None)
    call.outcome = outcome
    call.retries = retries
    binding.session.after(binding.actor, call)


def answered(call: CallRecord, parsed: Mapping[str, Any]) -> None:
    """What a successful answer held, on the call's record: ``found``, ``more``, ``left`` (one writer: here)."""
    if call.operation == Op.GET_ITEM:
        call.found = "Item" in parsed
    elif call.operation in (Op.QUERY, Op.SCAN):
        call.found = int(parsed.get("Count") or 0) > 0
        call.more = "LastEvaluatedKey" in parsed
    unprocessed = parsed.get("UnprocessedItems") or {}
    keys = parsed.get("UnprocessedKeys") or {}
    call.left = sum(len(v) for v in unprocessed.values() if isinstance(v, list)) + sum(
        len(v.get("Keys") or []) for v in keys.values() if isinstance(v, Mapping)
    )
    headers = (parsed.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
    named = str(headers.get(_REPLICATIONS) or "")
    call.made = tuple(sorted(int(p) for p in named.split(",") if p.strip().isdigit()))


def _on_after(http_response: Any, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
    outcome = "ok"
    if http_response.status_code >= 300:
        code = parsed.get("Error", {}).get("Code")
        outcome = str(code or f"HTTP {http_response.status_code}")
    else:
        call = context.get(CALL)
        if isinstance(call, CallRecord) and current() is not None:
            answered(call, parsed)
    retries = int(parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0))
    _finish(context, outcome, retries)


def _on_error(exception: BaseException, context: dict[str, Any], **_: Any) -> None:
    attempts = int((context.get("retries") or {}).get("attempt", 1))
    _finish(context, type(exception).__name__, max(attempts - 1, 0))


def _attach(client: Any) -> None:
    """The race lab's handlers on one client's event emitter (once; ``unique_id`` keeps it once)."""
    events = client.meta.events
    events.register_last(f"before-parameter-build.{_SERVICE}", _on_params, unique_id="labkit-race-params")
    events.register(f"before-call.{_SERVICE}", _on_before_call, unique_id="labkit-race-before-call")
    # most specific and first: runs before any other after-call handler can raise
    for operation in client.meta.service_model.operation_names:
        events.register_first(
            f"after-call.{_SERVICE}.{operation}", _on_after, unique_id=f"labkit-race-after-{operation}"
        )
    events.register(f"after-call-error.{_SERVICE}", _on_error, unique_id="labkit-race-error")
    ref = weakref.ref(client)

    def on_send(request: Any, **_: Any) -> Any:
        binding = current()
        if binding is None or binding.plan is None:
            return None
        return binding.plan.send(binding.actor, ref(), binding.session, request)

    events.register(f"before-send.{_SERVICE}", on_send, unique_id="labkit-race-send")


def _enter(client: Any, operation: str, binding: Binding) -> None:
    """Before a bound call: the run still on, the client's handlers attached, its endpoint the lab's."""
    if binding.session.closed:
        who = binding.who if binding.who.startswith(("thread", "pool task")) else f"a thread of {binding.who}"
        raise RaceError(
            f"{who} made a DynamoDB call ({operation}) after its run had ended; "
            "nothing was sent. An actor must wait for the threads it starts (join them, or leave "
            "the `with ThreadPoolExecutor()` block) before it returns"
        )
    if client not in _attached:
        with _attach_lock:
            if client not in _attached:
                _attach(client)
                _attached[client] = endpoint_key(client.meta.endpoint_url)
    url = reached(client) if _reroutes else _attached[client]
    if binding.endpoint is not None and url != binding.endpoint:
        binding.session.refuse(
            RaceError(
                f"{binding.who} made a DynamoDB call ({operation}) on a client whose endpoint is "
                f"{client.meta.endpoint_url}, not the lab's ({binding.endpoint}); nothing was sent. "
                "Give the client endpoint_url=conn.endpoint_url, or no endpoint of its own in a labkit "
                "test (one that uses labkit_conn, or is marked @pytest.mark.labkit): the pytest plugin "
                "sends the calls bound for AWS to the lab"
            )
        )


def _leave(exc: BaseException | None) -> None:
    """After a bound call: a call whose turn was granted but never answered is finished here."""
    call = _open.pop(threading.get_ident(), None)
    binding = current()
    if call is None or binding is None or call.answered:
        return
    call.outcome = type(exc).__name__ if exc is not None else "no answer"
    binding.session.after(binding.actor, call)


# ---------------------------------------------------------------- the class-level wrappers

_original_call: Callable[..., Any] = BaseClient._make_api_call  # type: ignore[attr-defined]
_original_send: Callable[..., Any] = URLLib3Session.send


def _make_api_call(self: Any, operation_name: str, api_params: Mapping[str, Any]) -> Any:
    binding = current()
    if (binding is None and not _observers) or self.meta.service_model.service_name != _SERVICE:
        return _original_call(self, operation_name, api_params)
    for observer in list(_observers):
        observer.before(self, operation_name)
    if binding is not None:
        _enter(self, operation_name, binding)
        try:
            result = _original_call(self, operation_name, api_params)
        except BaseException as exc:
            _leave(exc)
            raise
        _leave(None)
    else:
        result = _original_call(self, operation_name, api_params)
    for observer in list(_observers):
        observer.after(self, operation_name, api_params, result)
    return result


def _send(self: Any, request: Any) -> Any:
    binding = current()
    if binding is not None and CALL not in (getattr(request, "context", None) or {}):
        raw = request.headers.get("X-Amz-Target") or b""
        target = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if target.startswith(_TARGET):
            binding.session.refuse(
                RaceError(
                    f"{binding.who} sent a DynamoDB request ({target.rpartition('.')[2]}) that did not go "
                    "through a botocore client call, so the race lab could not gate it. Make DynamoDB "
                    "calls through boto3/botocore clients, resources or PynamoDB models"
                )
            )
    return _original_send(self, request)


def _guard_async() -> None:
    """Refuse aiobotocore (and aioboto3) calls on bound threads: they bypass the wrapper."""
    global _async_guarded
    module = sys.modules.get("aiobotocore.client")
    cls = getattr(module, "AioBaseClient", None)
    if _async_guarded or cls is None:
        return
    original = cls._make_api_call

    async def guarded(self: Any, operation_name: str, api_params: Mapping[str, Any]) -> Any:
        binding = current()
        if binding is not None:
            binding.session.refuse(
                RaceError(
                    f"{binding.who} made an aiobotocore call ({operation_name}): the race lab gates "
                    "botocore's synchronous clients only (boto3 clients and resources, PynamoDB), so "
                    "this call would go out ungated and nothing the run claims would hold. Race-check "
                    "the code with a boto3 client, or drive the async code from synchronous actors"
                )
            )
        return await original(self, operation_name, api_params)

    cls._make_api_call = guarded
    _async_guarded = True


def install() -> None:
    """Wrap botocore's client call (and thread starts and joins, pool submits and shutdowns, Condition
    waits and notifies, HTTP sends) once per process."""
    global _installed
    with _install_lock:
        if not _installed:
            BaseClient._make_api_call = _make_api_call  # type: ignore[attr-defined]
            patch_threading()
            URLLib3Session.send = _send  # type: ignore[method-assign]
            _installed = True
        _guard_async()


__all__ = [
    "Observer",
    "add_observer",
    "add_reroute",
    "endpoint_key",
    "install",
    "reached",
    "remove_observer",
]
