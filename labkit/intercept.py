"""Where every botocore client passes: one class-level wrapper, a thread -> actor binding, observers.

On the floor: the race lab (:mod:`labkit.races`) and the pytest plugin both stand on it, and
importing it loads botocore only — no pandas, no race lab, no engine.

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

Bindings (:class:`Binding`: actor, session, faults, expected endpoint) are set by the run on the
threads it starts (:func:`bind_thread`) and follow an actor into the threads it starts
(``threading.Thread.start``) and the work it submits to a ``ThreadPoolExecutor`` (bound for the
work's duration; the pool's own worker threads stay unbound). A thread bound to no actor (setup,
the invariant, the test body) passes ungated.

A session that schedules (:class:`Scheduler`: the race lab's gate) makes each such thread or task
a *sub-actor* with a binding of its own (``A.1``, ``A.2``, in the order they were started), and is
told what it needs to know when every thread of a run stands still: when a sub-actor starts and
ends, and when a bound thread blocks and resumes — in ``Thread.join``, in
``ThreadPoolExecutor.shutdown`` (the ``with`` block's end) and in any ``threading.Condition``
wait (``Future.result``, ``concurrent.futures.wait``, ``Event``, ``Queue``, ``Semaphore``, ``Barrier``
all wait on one). The wait is CPython's own, with the waiter known, so a ``notify`` tells the
session exactly which threads it woke, and who woke them, before the notifier goes on. A thread
blocked elsewhere (a plain ``Lock`` held across a DynamoDB call, a ``SimpleQueue``, a socket) counts
as running.

What cannot be gated is refused, never let through: a client whose endpoint is not the lab's
(nothing is sent), an aiobotocore/aioboto3 call (its ``AioBaseClient`` overrides the method;
guarded once ``aiobotocore`` is imported), a DynamoDB request sent on a bound thread that never
passed the wrapper, and a call from a thread an actor started that outlives its run.
:class:`Observer` objects (the pytest plugin's) also see every DynamoDB call of the process, and a
*reroute* (:func:`add_reroute`, :mod:`labkit.routing`'s) tells the endpoint check where a client's
calls really go when they are sent somewhere else than the client's own endpoint.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from botocore.client import BaseClient
from botocore.httpsession import URLLib3Session

from .errors import LabkitError, RaceError

#: The key of a call's record in botocore's request context (labkit.faults reads it too). The
#: record starts as ``{"operation": name, "params": the request's parameters}`` (after boto3's
#: resources have serialised their values); the session adds what it records.
CALL = "labkit_call"
_SERVICE = "dynamodb"
_TARGET = "DynamoDB_20120810."


class Session(Protocol):
    """What a run does with the calls of its bound threads (the race lab's gate, a stress tally)."""

    @property
    def closed(self) -> bool:
        """True once the run is over: a later call from a thread an actor started is refused."""
        ...

    def before(self, actor: str, call: dict[str, Any]) -> None:
        """The call is about to be sent (may block: its turn)."""

    def after(self, actor: str, call: dict[str, Any]) -> None:
        """Its answer (or error) is in."""

    def refuse(self, error: LabkitError) -> None:
        """A call that cannot be gated: end the run with ``error`` (raises)."""


class Scheduler(Protocol):
    """A session that makes threads and pool tasks sub-actors, and wants to know when they block.

    Every method is called with the binding of the thread it is about: the new sub-actor's
    (:meth:`started`, :meth:`returned`, :meth:`ended`) or the calling thread's.
    """

    def spawn(self, parent: Binding, executor: Any | None) -> Binding:
        """A thread (``executor`` None) or a pool task the parent starts: the sub-actor's binding."""
        ...

    def started(self, task: Binding) -> None:
        """A pool task began on a worker thread."""

    def returned(self, task: Binding) -> None:
        """A sub-actor's function returned (or raised): nothing of it runs any more."""

    def ended(self, task: Binding, exc: BaseException | None) -> None:
        """A sub-actor is over: its thread's run ended (``exc``: what it raised), or its future is done."""

    def pool_tasks(self, executor: Any) -> tuple[str, ...]:
        """Every sub-actor submitted to ``executor`` (ended or not)."""
        ...

    def observed(self, task: Binding, other: Binding) -> None:
        """The thread got what ``other`` (a sub-actor that returned) made: its future's result."""

    def stamp(self, task: Binding) -> Any:
        """What the thread has seen so far (its clock), for a thread that will wait on it (an Event)."""
        ...

    def absorb(self, task: Binding, stamp: Any) -> None:
        """The thread saw what a ``stamp`` was taken of (an Event set by another thread)."""

    def blocked(self, task: Binding, on: tuple[str, ...] | None, how: str) -> None:
        """The thread waits: until the sub-actors ``on`` end, or (None) until a notify wakes it."""

    def woken(self, tasks: list[Binding], source: Binding | None) -> None:
        """A notify by ``source`` (None: an unbound thread) woke these waiting threads."""

    def resumed(self, task: Binding) -> None:
        """The thread's wait returned (woken, timed out, or the sub-actors ended)."""


class CallFaults(Protocol):
    """Faults placed on a run's calls (labkit.faults.FaultPlan): marked before the call, acted on at send."""

    def mark(self, actor: str, context: dict[str, Any]) -> None:
        """The call with this request context is about to be sent by ``actor``."""

    def send(self, actor: str, client: Any, session: Any, request: Any) -> Any:
        """botocore's ``before-send``: None to send the request, or the response to answer it with."""


@dataclass(eq=False)
class Binding:
    """What the DynamoDB calls of a bound thread belong to."""

    actor: str
    session: Session
    plan: CallFaults | None = None
    #: every client must use this endpoint (:func:`endpoint_key` form); None: not checked (AWS)
    endpoint: str | None = None
    #: how messages name the caller: "actor 'A'", "stress worker 'w3'"
    who: str = ""

    def __post_init__(self) -> None:
        if not self.who:
            self.who = f"actor {self.actor!r}"


class Observer(Protocol):
    """Sees every DynamoDB call of the process, bound or not (the pytest plugin's table tracker)."""

    def before(self, client: Any, operation: str) -> None:
        """Before the call; may raise to refuse it (nothing is sent)."""

    def after(self, client: Any, operation: str, params: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """After the call returned ``result``."""


_bindings: weakref.WeakKeyDictionary[threading.Thread, Binding] = weakref.WeakKeyDictionary()
#: clients whose events carry the race lab's handlers -> their endpoint (endpoint_key form)
_attached: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
#: the call each thread has in flight (its turn granted, its answer not yet in)
_open: dict[int, dict[str, Any]] = {}
_observers: list[Observer] = []
#: the Condition waiter lock of each bound thread waiting in Condition.wait -> its binding
_waiting: dict[Any, Binding] = {}
#: a pool worker thread between its task's return and the task's future being done -> that task
_finishing: dict[int, Binding] = {}
_local = threading.local()  # .in_pool: inside ThreadPoolExecutor.submit (its worker threads are not sub-actors)
#: functions of a client: the endpoint (endpoint_key form) its calls are rerouted to, or None
_reroutes: list[Callable[[Any], str | None]] = []
_install_lock = threading.Lock()
_installed = False
_async_guarded = False


# ---------------------------------------------------------------- bindings


def current() -> Binding | None:
    """The binding of the calling thread, or None.

    Looked up without ``threading.current_thread()``: a thread starting up sets its ``_started``
    Event (and may notify) before it is registered, and ``current_thread()`` would then register
    a stray ``_DummyThread`` for it, breaking the thread's own bookkeeping when it ends.
    """
    if not _bindings:
        return None
    thread = threading._active.get(threading.get_ident())  # type: ignore[attr-defined]
    return _bindings.get(thread) if thread is not None else None


def bind_thread(thread: threading.Thread, binding: Binding | None) -> None:
    """Bind a thread (before it starts) to ``binding``; None unbinds it."""
    if binding is None:
        _bindings.pop(thread, None)
    else:
        _bindings[thread] = binding


@contextlib.contextmanager
def bound(binding: Binding | None) -> Iterator[None]:
    """Run a block on the calling thread as ``binding`` (None: unbound), then restore."""
    thread = threading.current_thread()
    before = _bindings.get(thread)
    bind_thread(thread, binding)
    try:
        yield
    finally:
        bind_thread(thread, before)


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


def remove_reroute(reroute: Callable[[Any], str | None]) -> None:
    with contextlib.suppress(ValueError):
        _reroutes.remove(reroute)


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
        context[CALL] = {"operation": model.name, "params": params, "region": context.get("client_region")}


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
    if binding is None or call is None or "start" not in call:
        return
    _open.pop(threading.get_ident(), None)
    call["outcome"] = outcome
    call["retries"] = retries
    binding.session.after(binding.actor, call)


def _on_after(http_response: Any, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
    outcome = "ok"
    if http_response.status_code >= 300:
        code = parsed.get("Error", {}).get("Code")
        outcome = str(code or f"HTTP {http_response.status_code}")
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
    if call is None or binding is None or "end" in call:
        return
    call["outcome"] = type(exc).__name__ if exc is not None else "no answer"
    call["retries"] = int(call.get("retries") or 0)
    binding.session.after(binding.actor, call)


# ---------------------------------------------------------------- the class-level wrappers

_original_call: Callable[..., Any] = BaseClient._make_api_call  # type: ignore[attr-defined]
_original_start: Callable[..., Any] = threading.Thread.start
_original_join: Callable[..., Any] = threading.Thread.join
_original_submit: Callable[..., Any] = ThreadPoolExecutor.submit
_original_shutdown: Callable[..., Any] = ThreadPoolExecutor.shutdown
_original_wait: Callable[..., Any] = threading.Condition.wait
_original_notify: Callable[..., Any] = threading.Condition.notify
_original_result: Callable[..., Any] = Future.result
_original_exception: Callable[..., Any] = Future.exception
_original_set: Callable[..., Any] = threading.Event.set
_original_event_wait: Callable[..., Any] = threading.Event.wait
#: each pool task's future -> the task (for the happens-before of a result)
_task_of: weakref.WeakKeyDictionary[Future[Any], Binding] = weakref.WeakKeyDictionary()
#: each Event set by a bound thread -> (its session, what the setter had seen)
_stamps: weakref.WeakKeyDictionary[threading.Event, tuple[Any, Any]] = weakref.WeakKeyDictionary()
_original_send: Callable[..., Any] = URLLib3Session.send
_allocate_lock: Callable[[], Any] = threading.Lock


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


def _scheduler(binding: Binding | None) -> Scheduler | None:
    """The binding's session if it schedules sub-actors (the race lab's gate; not a stress tally)."""
    if binding is None:
        return None
    session = binding.session
    return session if hasattr(session, "spawn") else None  # type: ignore[return-value]


def _start(self: threading.Thread) -> None:
    binding = current()
    if binding is not None and self not in _bindings and not getattr(_local, "in_pool", 0):
        scheduler = _scheduler(binding)
        if scheduler is None:
            _bindings[self] = binding  # a thread an actor starts makes the actor's calls
        else:
            child = scheduler.spawn(binding, None)  # a sub-actor: A.1, A.2, ... in start order
            _bindings[self] = child
            run = self.run

            def run_as_sub_actor() -> None:
                exc: BaseException | None = None
                try:
                    run()
                except BaseException as caught:  # told to the session, which judges it
                    exc = caught
                finally:
                    scheduler.returned(child)
                    scheduler.ended(child, exc)

            self.run = run_as_sub_actor  # type: ignore[method-assign]
    _original_start(self)


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    binding = current()
    target = _bindings.get(self)
    scheduler = _scheduler(binding)
    if (
        scheduler is None
        or binding is None
        or target is None
        or target is binding
        or target.session is not binding.session
    ):
        _original_join(self, timeout)
        return
    scheduler.blocked(binding, (target.actor,), f"joins {target.actor}")
    try:
        _original_join(self, timeout)
    finally:
        scheduler.resumed(binding)


def _run_bound(binding: Binding | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    with bound(binding):
        return fn(*args, **kwargs)


def _run_task(task: Binding, scheduler: Scheduler, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    with bound(task):
        scheduler.started(task)
        try:
            return fn(*args, **kwargs)
        finally:
            scheduler.returned(task)
            _finishing[threading.get_ident()] = task  # until its future is done (notify's source)


def _submit(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
    binding = current()
    if binding is None:
        if not _bindings:
            return _original_submit(self, fn, *args, **kwargs)  # type: ignore[no-any-return]
        return _original_submit(self, _run_bound, None, fn, *args, **kwargs)  # type: ignore[no-any-return]
    scheduler = _scheduler(binding)
    _local.in_pool = getattr(_local, "in_pool", 0) + 1  # the pool's worker threads are no sub-actors
    try:
        if scheduler is None:  # the work runs as its submitter
            return _original_submit(self, _run_bound, binding, fn, *args, **kwargs)  # type: ignore[no-any-return]
        task = scheduler.spawn(binding, self)
        try:
            future: Future[Any] = _original_submit(self, _run_task, task, scheduler, fn, *args, **kwargs)
        except BaseException:
            scheduler.returned(task)
            scheduler.ended(task, None)
            raise
    finally:
        _local.in_pool -= 1

    def done(_: Future[Any]) -> None:  # after the future's waiters were notified
        for ident in [i for i, t in _finishing.items() if t is task]:
            _finishing.pop(ident, None)
        scheduler.ended(task, None)

    _task_of[future] = task
    future.add_done_callback(done)
    return future


def _observe(future: Future[Any]) -> None:
    """A bound thread got a pool task's result (or error): everything the task did came first."""
    binding = current()
    task = _task_of.get(future) if binding is not None else None
    scheduler = _scheduler(binding)
    if (
        task is not None
        and binding is not None
        and scheduler is not None
        and task.session is binding.session
        and future.done()
        and not future.cancelled()
    ):
        scheduler.observed(binding, task)


def _result(self: Future[Any], timeout: float | None = None) -> Any:
    try:
        return _original_result(self, timeout)
    finally:
        if _task_of:
            _observe(self)


def _exception(self: Future[Any], timeout: float | None = None) -> BaseException | None:
    try:
        return _original_exception(self, timeout)  # type: ignore[no-any-return]
    finally:
        if _task_of:
            _observe(self)


def _event_set(self: threading.Event) -> None:
    binding = current()
    scheduler = _scheduler(binding)
    if scheduler is not None and binding is not None:
        _stamps[self] = (binding.session, scheduler.stamp(binding))
    _original_set(self)


def _event_wait(self: threading.Event, timeout: float | None = None) -> bool:
    got: bool = _original_event_wait(self, timeout)
    if got and _stamps:
        binding = current()
        scheduler = _scheduler(binding)
        found = _stamps.get(self)
        if scheduler is not None and binding is not None and found is not None and found[0] is binding.session:
            scheduler.absorb(binding, found[1])
    return got


def _shutdown(self: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False) -> None:
    binding = current()
    scheduler = _scheduler(binding)
    pending = scheduler.pool_tasks(self) if scheduler is not None and wait else ()
    if scheduler is None or binding is None or not pending:
        _original_shutdown(self, wait, cancel_futures=cancel_futures)
        return
    scheduler.blocked(binding, pending, f"waits for {', '.join(pending)} (ThreadPoolExecutor.shutdown)")
    try:
        _original_shutdown(self, wait, cancel_futures=cancel_futures)
    finally:
        scheduler.resumed(binding)


def _wait(self: threading.Condition, timeout: float | None = None) -> bool:
    """CPython's ``Condition.wait``, with the waiter known to the session of a bound thread."""
    binding = current()
    scheduler = _scheduler(binding)
    if scheduler is None or binding is None or (timeout is not None and timeout <= 0):
        return _original_wait(self, timeout)  # type: ignore[no-any-return]
    if not self._is_owned():  # type: ignore[attr-defined]
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = _allocate_lock()
    waiter.acquire()
    self._waiters.append(waiter)  # type: ignore[attr-defined]
    _waiting[waiter] = binding
    scheduler.blocked(binding, None, "waits (threading)")
    saved_state = self._release_save()  # type: ignore[attr-defined]
    gotit = False
    try:  # restore state no matter what (e.g., KeyboardInterrupt)
        if timeout is None:
            waiter.acquire()
            gotit = True
        else:
            gotit = waiter.acquire(True, timeout)
        return gotit
    finally:
        self._acquire_restore(saved_state)  # type: ignore[attr-defined]
        _waiting.pop(waiter, None)
        scheduler.resumed(binding)
        if not gotit:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)  # type: ignore[attr-defined]


def _notify(self: threading.Condition, n: int = 1) -> None:
    if not _waiting:
        _original_notify(self, n)
        return
    before = list(self._waiters)  # type: ignore[attr-defined]
    _original_notify(self, n)
    after = self._waiters  # type: ignore[attr-defined]
    woken = [_waiting[w] for w in before if w in _waiting and w not in after]
    if not woken:
        return
    source = current() or _finishing.get(threading.get_ident())
    sessions: dict[int, list[Binding]] = {}
    for binding in woken:
        sessions.setdefault(id(binding.session), []).append(binding)
    for group in sessions.values():
        scheduler = _scheduler(group[0])
        if scheduler is not None:
            scheduler.woken(group, source if source is not None and source.session is group[0].session else None)


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
            threading.Thread.start = _start  # type: ignore[method-assign]
            threading.Thread.join = _join  # type: ignore[method-assign]
            ThreadPoolExecutor.submit = _submit  # type: ignore[method-assign,assignment]
            ThreadPoolExecutor.shutdown = _shutdown  # type: ignore[method-assign,assignment]
            Future.result = _result  # type: ignore[method-assign]
            Future.exception = _exception  # type: ignore[method-assign]
            threading.Event.set = _event_set  # type: ignore[method-assign]
            threading.Event.wait = _event_wait  # type: ignore[method-assign]
            threading.Condition.wait = _wait  # type: ignore[method-assign]
            threading.Condition.notify = _notify  # type: ignore[method-assign]
            URLLib3Session.send = _send  # type: ignore[method-assign]
            _installed = True
        _guard_async()


__all__ = [
    "CALL",
    "Binding",
    "CallFaults",
    "Observer",
    "Scheduler",
    "Session",
    "add_observer",
    "add_reroute",
    "bind_thread",
    "bound",
    "current",
    "endpoint_key",
    "install",
    "reached",
    "remove_observer",
    "remove_reroute",
]
