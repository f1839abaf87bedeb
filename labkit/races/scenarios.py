"""Fault scenarios for :func:`labkit.races.explore`: one fault at each call point of each actor.

``explore(..., faults=["lose-response", "transaction-conflict"])`` explores every chosen order
once with no fault and once per *scenario*: one fault (the race lab's injection,
:mod:`labkit.engine_plugins.faults`) on one call of one actor — ``"B2: lose-response"`` is B's second call,
applied by DynamoDB and its answer lost. The first call points come from each actor's solo run after
``setup()``; a fault is placed only where DynamoDB can answer with it (:func:`can_give`): a
``TransactionConflict`` meets writes and transactions, never a GetItem or a Query; a
``stale-read`` meets eventually consistent reads (no ``ConsistentRead=True``), ``unprocessed-items``
batches, ``short-page`` Query and Scan; ``ttl-delete`` (DynamoDB's TTL process deletes the expired items
just before the call) meets any call — each judged in each order from the call really made there
(data-dependent code makes other calls in other orders), with the call points every run without a
fault reaches (:class:`Scenarios`). A stale or torn read is placed once per *view* a run without a
fault shows can change its answer (:mod:`labkit.races.views`: ``B3: stale-read (index misses A1)``,
``B2: torn-read (misses A1[0])``, the latter only beside another actor's transaction). One fault
per run: the calls a fault adds (an actor's retry, the next page) are gated and ordered like any
other, but carry no second fault.
``faults="all"`` is every kind explore places (:data:`EXPLORE_FAULTS`) — on a backend other than
labkit's embedded endpoint, every kind but the weak answers and ``ttl-delete``, which only that endpoint
gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..engine_plugins.faults import FAULT_NAMES
from ..engine_plugins.faults.kinds import EMBEDDED_ONLY, call_point
from ..engine_plugins.faults.views import View
from ..shared.catalogue import WeakAnswer
from ..shared.errors import ValidationError

#: The faults explore places at every call point (``hold`` needs two turns of one transaction).
EXPLORE_FAULTS = tuple(name for name in FAULT_NAMES if name != "hold")
#: ``faults="all"``.
ALL = "all"
#: Placed only with a view a run names (another actor's transaction beside the read): never at a solo call point.
VIEWS_ONLY = (WeakAnswer.TORN_READ,)

Scenario = tuple[str, ...]
#: A call point as the solo run saw it: the operation, or (operation, the request's parameters).
Point = str | tuple[str, Mapping[str, Any]]


def check_fault_names(faults: Sequence[str] | str | None, embedded: bool = True) -> tuple[str, ...]:
    """``faults=`` as a tuple of known fault names (duplicates dropped); a ValidationError otherwise.

    ``"all"`` is :data:`EXPLORE_FAULTS` (without the weak answers and ``ttl-delete`` unless ``embedded``).
    """
    if faults is None:
        return ()
    if faults == ALL:
        return tuple(f for f in EXPLORE_FAULTS if embedded or f not in EMBEDDED_ONLY)
    if isinstance(faults, str) or not isinstance(faults, Sequence):
        raise ValidationError(
            f"faults={faults!r}: pass a list of fault names, e.g. ['lose-response', 'transaction-conflict'], or 'all'"
        )
    unknown = [f for f in faults if f not in EXPLORE_FAULTS]
    if unknown:
        hint = " (a hold needs a transaction's two turns: use run_interleaving)" if "hold" in unknown else ""
        raise ValidationError(
            f"unknown fault(s) for explore: {', '.join(map(repr, unknown))}{hint}; "
            f"explore places these at every call point: {', '.join(EXPLORE_FAULTS)} (or faults='all')"
        )
    return tuple(dict.fromkeys(faults))


def can_give(fault: str, operation: str, params: Mapping[str, Any] | None = None) -> bool:
    """Can DynamoDB answer this call with this fault? (``params`` None: judged by the operation alone.)"""
    return FAULT_NAMES[fault]().gives(operation, params)


def fault_scenarios(operations: Mapping[str, Sequence[Point]], faults: Sequence[str]) -> list[Scenario]:
    """No fault first, then one fault per (actor, call, fault) where DynamoDB can give that fault."""
    scenarios: list[Scenario] = [()]
    for actor in sorted(operations):
        for n, point in enumerate(operations[actor], start=1):
            operation, params = (point, None) if isinstance(point, str) else point
            for fault in faults:
                if fault not in VIEWS_ONLY and can_give(fault, operation, params):
                    scenarios.append((f"{call_point(actor, n)}: {fault}",))
    return scenarios


class Scenarios(list[Scenario]):
    """An exploration's scenarios: the solo runs' call points first, then each one a run reveals.

    An actor's n-th call depends on what it read: the GetItem of its solo run may be a Scan in
    another order, or a call the solo run never made. Every run without a fault offers its calls
    (:meth:`offer`), and a fault asked for by name is placed wherever DynamoDB can give it in
    *some* order, appended to the list the strategies are still walking. (A fault's own run adds
    no point: one fault per run, so a call only a fault makes never takes a second.)
    """

    def __init__(self, first: Sequence[Scenario], faults: Sequence[str]) -> None:
        super().__init__(first)
        self.faults = tuple(faults)
        self._known = set(first)

    def offer(
        self,
        actor: str,
        n: int,
        operation: str,
        params: Mapping[str, Any],
        views: Mapping[str, Sequence[View]] | None = None,
    ) -> None:
        """Actor's n-th call (1-based) was ``operation``: a scenario for each fault DynamoDB can give it,
        and one for each of the ``views`` of a weak answer the run showed there (:mod:`labkit.races.views`)."""
        for fault in self.faults:
            point = f"{call_point(actor, n)}: {fault}"
            placed = [(point,)] if fault not in VIEWS_ONLY else []
            placed += [(f"{point} ({view.text()})",) for view in (views or {}).get(fault, ())]
            for scenario in placed:
                if scenario not in self._known and can_give(fault, operation, params):
                    self._known.add(scenario)
                    self.append(scenario)


def describe(scenarios: Sequence[Scenario], faults: Sequence[str]) -> str:
    """``"no fault and each of 6 faults (lose-response, transaction-conflict at 4 call points)"``."""
    placed = len(scenarios) - 1
    points = len({s[0].rsplit(":", 1)[0] for s in scenarios if s})
    return f"no fault and each of {placed:,} faults ({', '.join(faults)} at {points:,} call points)"


__all__ = [
    "ALL",
    "EXPLORE_FAULTS",
    "Point",
    "Scenario",
    "Scenarios",
    "VIEWS_ONLY",
    "can_give",
    "check_fault_names",
    "describe",
    "fault_scenarios",
]
