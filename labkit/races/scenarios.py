"""Fault scenarios for :func:`labkit.races.explore`: one fault at each call point of each actor.

``explore(..., faults=["lose-response", "transaction-conflict"])`` explores every chosen order
once with no fault and once per *scenario*: one fault (the race lab's injection,
:mod:`labkit.faults`) on one call of one actor — ``"B2: lose-response"`` is B's second call,
applied by DynamoDB and its answer lost. The call points come from each actor's solo run after
``setup()``; a fault is placed only where DynamoDB can answer with it (a ``TransactionConflict``
meets writes and transactions, never a GetItem or a Query). One fault per run: the calls a fault
adds (an actor's retry) are gated and ordered like any other, but carry no second fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..errors import ValidationError
from ..faults import CONFLICTABLE, FAULT_NAMES
from ..faults.kinds import call_point

#: The faults explore places at every call point (``hold`` needs two turns of one transaction).
EXPLORE_FAULTS = tuple(name for name in FAULT_NAMES if name != "hold")
#: Faults DynamoDB gives only the operations that can meet them.
ONLY_FOR = {"transaction-conflict": frozenset(CONFLICTABLE)}

Scenario = tuple[str, ...]


def check_fault_names(faults: Sequence[str] | None) -> tuple[str, ...]:
    """``faults=`` as a tuple of known fault names (duplicates dropped); a ValidationError otherwise."""
    if faults is None:
        return ()
    if isinstance(faults, str) or not isinstance(faults, Sequence):
        raise ValidationError(
            f"faults={faults!r}: pass a list of fault names, e.g. ['lose-response', 'transaction-conflict']"
        )
    unknown = [f for f in faults if f not in EXPLORE_FAULTS]
    if unknown:
        hint = " (a hold needs a transaction's two turns: use run_interleaving)" if "hold" in unknown else ""
        raise ValidationError(
            f"unknown fault(s) for explore: {', '.join(map(repr, unknown))}{hint}; "
            f"explore places these at every call point: {', '.join(EXPLORE_FAULTS)}"
        )
    return tuple(dict.fromkeys(faults))


def fault_scenarios(operations: Mapping[str, Sequence[str]], faults: Sequence[str]) -> list[Scenario]:
    """No fault first, then one fault per (actor, call, fault) where DynamoDB can give that fault."""
    scenarios: list[Scenario] = [()]
    for actor in sorted(operations):
        for n, operation in enumerate(operations[actor], start=1):
            for fault in faults:
                if operation in ONLY_FOR.get(fault, (operation,)):
                    scenarios.append((f"{call_point(actor, n)}: {fault}",))
    return scenarios


def describe(scenarios: Sequence[Scenario], faults: Sequence[str]) -> str:
    """``"no fault and each of 6 faults (lose-response, transaction-conflict at 4 call points)"``."""
    placed = len(scenarios) - 1
    points = len({s[0].rsplit(":", 1)[0] for s in scenarios if s})
    return f"no fault and each of {placed:,} faults ({', '.join(faults)} at {points:,} call points)"


__all__ = ["EXPLORE_FAULTS", "ONLY_FOR", "Scenario", "check_fault_names", "describe", "fault_scenarios"]
