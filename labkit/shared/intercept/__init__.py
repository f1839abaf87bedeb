"""Where every botocore client passes: one class-level wrapper, a thread -> actor binding, observers.

On the floor: the race lab (:mod:`labkit.races`) and the pytest plugin both stand on it, and
importing it loads botocore only — no pandas, no race lab, no engine.

Four modules, each one job, their names re-exported here (``from labkit.shared.intercept import bound``):

:mod:`~labkit.shared.intercept.bindings`
    which run, actor and faults a thread's calls belong to (:class:`Binding`, :func:`bind_thread`,
    :func:`bound`, :func:`current`), and the :class:`Session` contract a run keeps;
:mod:`~labkit.shared.intercept.subactors`
    the threads and pool tasks an actor starts (its sub-actors) and when a bound thread blocks,
    told to a session that tracks them (:class:`TaskHooks`: the race lab's gate);
:mod:`~labkit.shared.intercept.record`
    one call as the race lab records it (:class:`CallRecord`), kept in botocore's request context;
:mod:`~labkit.shared.intercept.wrapper`
    botocore's client call, wrapped once per process (:func:`install`): the race lab's handlers on
    each client, what cannot be gated refused, and the :class:`Observer` objects and reroutes that
    see every DynamoDB call of the process (:func:`add_observer`, :func:`add_reroute`).
"""

from __future__ import annotations

from .bindings import Binding, CallFaults, Session, bind_thread, bound, current
from .record import CALL, CallRecord
from .subactors import TaskHooks
from .wrapper import (
    Observer,
    add_observer,
    add_reroute,
    endpoint_key,
    install,
    reached,
    remove_observer,
)

__all__ = [
    "CALL",
    "Binding",
    "CallFaults",
    "CallRecord",
    "Observer",
    "TaskHooks",
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
]
