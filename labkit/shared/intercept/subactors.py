"""Sub-actors: the threads and pool tasks an actor starts, and when a bound thread blocks and who wakes it.

A session that tracks tasks (:class:`TaskHooks`: the race lab's gate) makes each thread or pool task
an actor starts a *sub-actor* with a binding of its own (``A.1``, ``A.2``, in the order they were started), and is
told what it needs to know when every thread of a run stands still: when a sub-actor starts and
ends, and when a bound thread blocks and resumes — in ``Thread.join``, in
``ThreadPoolExecutor.shutdown`` (the ``with`` block's end) and in any ``threading.Condition``
wait (``Future.result``, ``concurrent.futures.wait``, ``Event``, ``Queue``, ``Semaphore``, ``Barrier``
all wait on one). The wait is CPython's own, with the waiter known, so a ``notify`` tells the
session exactly which threads it woke, and who woke them, before the notifier goes on. A thread
blocked elsewhere (a plain ``Lock`` held across a DynamoDB call, a ``SimpleQueue``, a socket) counts
as running.

asyncio: ``asyncio.to_thread`` and ``loop.run_in_executor`` submit to a ThreadPoolExecutor (the
loop's default one, or the one given), so each is a pool task like any other. The actor's thread
then waits in its event loop's selector, for ``call_soon_threadsafe`` (the pool future's done
callback, which hands the result to the loop): a bound thread waiting there is blocked, and a
``call_soon_threadsafe`` to its loop wakes it, told to the session like a ``notify``. A pool task
ends once every done callback of its future ran, so the loop is woken before its task counts as
ended, as a thread waiting in ``Future.result`` is.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from ..errors import RaceError
from .bindings import BOUND_THREADS, Binding, bound, current


class TaskHooks(Protocol):
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


#: the Condition waiter lock of each bound thread waiting in Condition.wait -> its binding
_waiting: dict[Any, Binding] = {}
#: a pool worker thread between its task's return and the task's future being done -> that task
_finishing: dict[int, Binding] = {}
_local = threading.local()  # .in_pool: inside ThreadPoolExecutor.submit (its worker threads are not sub-actors)

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
_original_invoke_callbacks: Callable[..., Any] = Future._invoke_callbacks  # type: ignore[attr-defined]
#: each pending pool task's future -> what ends the task (called once its done callbacks ran)
_ends: dict[Future[Any], Callable[[], None]] = {}
#: each pool task's future -> the task (for the happens-before of a result)
_task_of: weakref.WeakKeyDictionary[Future[Any], Binding] = weakref.WeakKeyDictionary()
#: each Event set by a bound thread -> (its session, what the setter had seen)
_stamps: weakref.WeakKeyDictionary[threading.Event, tuple[Any, Any]] = weakref.WeakKeyDictionary()
_allocate_lock: Callable[[], Any] = threading.Lock


def _hooks(binding: Binding | None) -> TaskHooks | None:
    """The binding's session if it schedules sub-actors (the race lab's gate; not a stress tally)."""
    if binding is None:
        return None
    session = binding.session
    return session if hasattr(session, "spawn") else None  # type: ignore[return-value]


def _start(self: threading.Thread) -> None:
    binding = current()
    if binding is not None and self not in BOUND_THREADS and not getattr(_local, "in_pool", 0):
        hooks = _hooks(binding)
        if hooks is None:
            BOUND_THREADS[self] = binding  # a thread an actor starts makes the actor's calls
        else:
            child = hooks.spawn(binding, None)  # a sub-actor: A.1, A.2, ... in start order
            BOUND_THREADS[self] = child
            run = self.run

            def run_as_sub_actor() -> None:
                exc: BaseException | None = None
                try:
                    run()
                except BaseException as caught:  # told to the session, which judges it
                    exc = caught
                finally:
                    hooks.returned(child)
                    hooks.ended(child, exc)

            self.run = run_as_sub_actor  # type: ignore[method-assign]
    _original_start(self)


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    binding = current()
    target = BOUND_THREADS.get(self)
    hooks = _hooks(binding)
    if hooks is None or binding is None or target is None or target is binding or target.session is not binding.session:
        _original_join(self, timeout)
        return
    hooks.blocked(binding, (target.actor,), f"joins {target.actor}")
    try:
        _original_join(self, timeout)
    finally:
        hooks.resumed(binding)


def _run_bound(binding: Binding | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    with bound(binding):
        return fn(*args, **kwargs)


def _run_task(task: Binding, hooks: TaskHooks, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    with bound(task):
        hooks.started(task)
        try:
            return fn(*args, **kwargs)
        finally:
            hooks.returned(task)
            _finishing[threading.get_ident()] = task  # until its future is done (notify's source)


def _submit(self: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
    binding = current()
    if binding is None:
        if not BOUND_THREADS:
            return _original_submit(self, fn, *args, **kwargs)  # type: ignore[no-any-return]
        return _original_submit(self, _run_bound, None, fn, *args, **kwargs)  # type: ignore[no-any-return]
    hooks = _hooks(binding)
    if hooks is not None:
        _refuse_foreign_loop(binding)
    _local.in_pool = getattr(_local, "in_pool", 0) + 1  # the pool's worker threads are no sub-actors
    try:
        if hooks is None:  # the work runs as its submitter
            return _original_submit(self, _run_bound, binding, fn, *args, **kwargs)  # type: ignore[no-any-return]
        task = hooks.spawn(binding, self)
        try:
            future: Future[Any] = _original_submit(self, _run_task, task, hooks, fn, *args, **kwargs)
        except BaseException:
            hooks.returned(task)
            hooks.ended(task, None)
            raise
    finally:
        _local.in_pool -= 1

    def done() -> None:  # after the future's waiters were notified and its done callbacks ran
        for ident in [i for i, t in _finishing.items() if t is task]:
            _finishing.pop(ident, None)
        hooks.ended(task, None)

    _task_of[future] = task
    _ends[future] = done
    if future.done():  # it finished before it was registered: nobody else ends it
        end = _ends.pop(future, None)
        if end is not None:
            end()
    return future


def _invoke_callbacks(self: Future[Any]) -> None:
    """The future's done callbacks, then (a pool task's) its end: asyncio wakes its loop in a callback."""
    try:
        _original_invoke_callbacks(self)
    finally:
        end = _ends.pop(self, None) if _ends else None
        if end is not None:
            end()


def _observe(future: Future[Any]) -> None:
    """A bound thread got a pool task's result (or error): everything the task did came first."""
    binding = current()
    task = _task_of.get(future) if binding is not None else None
    hooks = _hooks(binding)
    if (
        task is not None
        and binding is not None
        and hooks is not None
        and task.session is binding.session
        and future.done()
        and not future.cancelled()
    ):
        hooks.observed(binding, task)


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
    hooks = _hooks(binding)
    if hooks is not None and binding is not None:
        _stamps[self] = (binding.session, hooks.stamp(binding))
    _original_set(self)


def _event_wait(self: threading.Event, timeout: float | None = None) -> bool:
    got: bool = _original_event_wait(self, timeout)
    if got and _stamps:
        binding = current()
        hooks = _hooks(binding)
        found = _stamps.get(self)
        if hooks is not None and binding is not None and found is not None and found[0] is binding.session:
            hooks.absorb(binding, found[1])
    return got


def _shutdown(self: ThreadPoolExecutor, wait: bool = True, *, cancel_futures: bool = False) -> None:
    binding = current()
    hooks = _hooks(binding)
    pending = hooks.pool_tasks(self) if hooks is not None and wait else ()
    if hooks is None or binding is None or not pending:
        _original_shutdown(self, wait, cancel_futures=cancel_futures)
        return
    hooks.blocked(binding, pending, f"waits for {', '.join(pending)} (ThreadPoolExecutor.shutdown)")
    try:
        _original_shutdown(self, wait, cancel_futures=cancel_futures)
    finally:
        hooks.resumed(binding)


def _wait(self: threading.Condition, timeout: float | None = None) -> bool:
    """CPython's ``Condition.wait``, with the waiter known to the session of a bound thread."""
    binding = current()
    hooks = _hooks(binding)
    if hooks is None or binding is None or (timeout is not None and timeout <= 0):
        return _original_wait(self, timeout)  # type: ignore[no-any-return]
    if not self._is_owned():  # type: ignore[attr-defined]
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = _allocate_lock()
    waiter.acquire()
    self._waiters.append(waiter)  # type: ignore[attr-defined]
    _waiting[waiter] = binding
    hooks.blocked(binding, None, "waits (threading)")
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
        hooks.resumed(binding)
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
        hooks = _hooks(group[0])
        if hooks is not None:
            hooks.woken(group, source if source is not None and source.session is group[0].session else None)


# ---------------------------------------------------------------- asyncio

#: an event loop whose bound thread waits in its selector -> that thread's binding
_sleeping: dict[Any, Binding] = {}
_sleep_lock = threading.Lock()  # orders a waiting loop against call_soon_threadsafe (never a task's wait)


class _WatchedSelector:
    """An event loop's selector: a bound thread's wait in ``select`` is told to its session."""

    def __init__(self, inner: Any, loop: Any) -> None:
        self._inner = inner
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def select(self, timeout: float | None = None) -> Any:
        binding = current()
        hooks = _hooks(binding)
        if hooks is None or binding is None or (timeout is not None and timeout <= 0):
            return self._inner.select(timeout)
        with _sleep_lock:
            waits = not self._loop._ready  # a callback already queued (a wake-up sent): no wait
            if waits:
                _sleeping[self._loop] = binding
                hooks.blocked(binding, None, "waits (asyncio event loop)")
        if not waits:
            return self._inner.select(timeout)
        try:
            return self._inner.select(timeout)
        finally:
            with _sleep_lock:
                _sleeping.pop(self._loop, None)
            hooks.resumed(binding)


def _refuse_foreign_loop(binding: Binding) -> None:
    """A pool task submitted from an event loop that is not asyncio's own (uvloop): the run ends at once.

    Its thread would wait for the task inside that loop, where the lab cannot see it wait: the run
    would stand still and time out. asyncio's own loop is watched (the module docstring).
    """
    aio = sys.modules.get("asyncio")
    loop = aio._get_running_loop() if aio is not None else None
    if loop is None or isinstance(loop, aio.BaseEventLoop):  # type: ignore[union-attr]
        return
    kind = f"{type(loop).__module__.split('.')[0]}'s {type(loop).__qualname__}"
    binding.session.refuse(
        RaceError(
            f"{binding.who} sent work to a thread pool (asyncio.to_thread or loop.run_in_executor) from an "
            f"event loop the race lab cannot watch ({kind}); nothing was sent. Run the actor's coroutine with "
            "asyncio.run(...) (asyncio's own event loop, not uvloop): its to_thread and run_in_executor calls "
            "are explored as sub-actors there. Or make the DynamoDB calls directly, or in a ThreadPoolExecutor "
            "whose futures the actor waits for."
        )
    )


def _run_once(self: Any) -> None:
    """One turn of an event loop; a loop run by a bound thread has its selector watched first."""
    if current() is not None and not isinstance(self._selector, _WatchedSelector):
        self._selector = _WatchedSelector(self._selector, self)
    _original_run_once(self)


def _call_soon_threadsafe(self: Any, callback: Callable[..., Any], *args: Any, context: Any = None) -> Any:
    """asyncio's wake-up from another thread: a bound thread waiting in this loop's selector is woken.

    The callback is queued and the sleeper taken under one lock, so the wake-up is told for the very
    wait it ends: a loop that already ran the callback cannot wait again (and be told woken) in between.
    """
    if not BOUND_THREADS:  # no run going on: no thread can be waiting for the lab
        return _original_call_soon_threadsafe(self, callback, *args, context=context)
    with _sleep_lock:
        handle = _original_call_soon_threadsafe(self, callback, *args, context=context)
        sleeper = _sleeping.pop(self, None)
        hooks = _hooks(sleeper)
        if sleeper is not None and hooks is not None:
            source = current() or _finishing.get(threading.get_ident())
            if source is not None and source.session is not sleeper.session:
                source = None
            hooks.woken([sleeper], source)
    return handle


def _patch_asyncio() -> None:
    global _original_run_once, _original_call_soon_threadsafe
    from asyncio import base_events

    loop = base_events.BaseEventLoop
    _original_run_once = loop._run_once  # type: ignore[attr-defined]
    _original_call_soon_threadsafe = loop.call_soon_threadsafe
    loop._run_once = _run_once  # type: ignore[attr-defined]
    loop.call_soon_threadsafe = _call_soon_threadsafe  # type: ignore[method-assign,assignment]


_original_run_once: Callable[..., Any]
_original_call_soon_threadsafe: Callable[..., Any]


def patch_threading() -> None:
    """Wrap thread starts and joins, pool submits and shutdowns, future results and callbacks, Event
    sets and waits, Condition waits and notifies, and an asyncio loop's selector waits and thread-safe
    wake-ups (once: :func:`labkit.shared.intercept.install` calls it under its lock)."""
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
    Future._invoke_callbacks = _invoke_callbacks  # type: ignore[attr-defined]
    _patch_asyncio()


__all__ = [
    "TaskHooks",
    "patch_threading",
]
