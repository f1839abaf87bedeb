"""Thread -> actor bindings: which run, actor and faults the DynamoDB calls of a thread belong to.

Bindings (:class:`Binding`: actor, session, faults, expected endpoint) are set by the run on the
threads it starts (:func:`bind_thread`) and follow an actor into the threads it starts
(``threading.Thread.start``) and the work it submits to a ``ThreadPoolExecutor`` (bound for the
work's duration; the pool's own worker threads stay unbound). A thread bound to no actor (setup,
the invariant, the test body) passes ungated.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import LabkitError
from .record import CallRecord


class Session(Protocol):
    """What a run does with the calls of its bound threads (the race lab's gate, a stress tally)."""

    @property
    def closed(self) -> bool:
        """True once the run is over: a later call from a thread an actor started is refused."""
        ...

    def before(self, actor: str, call: CallRecord) -> None:
        """The call is about to be sent (may block: its turn)."""

    def after(self, actor: str, call: CallRecord) -> None:
        """Its answer (or error) is in."""

    def hold(self, actor: str, call: CallRecord, outcome: str) -> None:
        """The call's first half is done (recorded with ``outcome``); it waits for the actor's next turn
        for its second half (a transaction held in flight: prepared, then committed)."""

    def refuse(self, error: LabkitError) -> None:
        """A call that cannot be gated: end the run with ``error`` (raises)."""


class CallFaults(Protocol):
    """Faults placed on a run's calls (labkit.engine_plugins.faults.FaultPlan): marked before the call, acted on
    at send."""

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
    #: every client must use this endpoint (:func:`~labkit.shared.intercept.endpoint_key` form); None: not checked (AWS)
    endpoint: str | None = None
    #: how messages name the caller: "actor 'A'", "stress worker 'w3'"
    who: str = ""

    def __post_init__(self) -> None:
        if not self.who:
            self.who = f"actor {self.actor!r}"


#: every bound thread -> its binding (threads an actor starts get theirs from :mod:`labkit.shared.intercept.subactors`)
BOUND_THREADS: weakref.WeakKeyDictionary[threading.Thread, Binding] = weakref.WeakKeyDictionary()


def current() -> Binding | None:
    """The binding of the calling thread, or None.

    Looked up without ``threading.current_thread()``: a thread starting up sets its ``_started``
    Event (and may notify) before it is registered, and ``current_thread()`` would then register
    a stray ``_DummyThread`` for it, breaking the thread's own bookkeeping when it ends.
    """
    if not BOUND_THREADS:
        return None
    thread = threading._active.get(threading.get_ident())  # type: ignore[attr-defined]
    return BOUND_THREADS.get(thread) if thread is not None else None


def bind_thread(thread: threading.Thread, binding: Binding | None) -> None:
    """Bind a thread (before it starts) to ``binding``; None unbinds it."""
    if binding is None:
        BOUND_THREADS.pop(thread, None)
    else:
        BOUND_THREADS[thread] = binding


@contextlib.contextmanager
def bound(binding: Binding | None) -> Iterator[None]:
    """Run a block on the calling thread as ``binding`` (None: unbound), then restore."""
    thread = threading.current_thread()
    before = BOUND_THREADS.get(thread)
    bind_thread(thread, binding)
    try:
        yield
    finally:
        bind_thread(thread, before)


__all__ = [
    "BOUND_THREADS",
    "Binding",
    "CallFaults",
    "Session",
    "bind_thread",
    "bound",
    "current",
]
