"""Calls of an explored run, when two of them conflict, and what a strategy asks of the runner.

This is the ground :mod:`~labkit.races.strategies` (exhaustive, DPOR, PCT) and
:mod:`~labkit.races.runner` both stand on; neither imports the other. A strategy is handed a
runner typed by :class:`OrderRunner` and calls ``runner.run(order, limit)``; the runner raises
:class:`BudgetSpent` when the strategy has used the runs it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .. import operations as ops
from ..errors import RaceError
from .interleave import Interleaving

#: Operations that only read; every other operation counts as a write.
READS = ops.READS
#: Operations whose call_key does not name items: they touch the whole table.
WHOLE_TABLE = ops.WHOLE_TABLE | ops.BATCHES


@dataclass(frozen=True)
class Call:
    """One DynamoDB call as exploration sees it: who made it, what, on which item(s)."""

    actor: str
    operation: str
    key: str
    #: the item keys touched, or None for the whole table
    keys: frozenset[str] | None
    write: bool

    @classmethod
    def of(cls, actor: str, operation: str, key: str) -> Call:
        """The call ``actor`` made: ``operation`` on the item(s) named by ``key`` (a call_key)."""
        keys: frozenset[str] | None = None
        if operation not in WHOLE_TABLE and key:
            keys = frozenset(part.strip() for part in key.split(";") if part.strip())
        return cls(actor, operation, key, keys or None, operation not in READS)

    def label(self) -> str:
        """``GetItem(ACCT#1/PROFILE)``, or the operation alone for a call without a key."""
        return f"{self.operation}({self.key})" if self.key else self.operation


def conflicts(a: Call, b: Call) -> bool:
    """Same actor (program order), or the same item with at least one write."""
    if a.actor == b.actor:
        return True
    if not (a.write or b.write):
        return False
    return a.keys is None or b.keys is None or bool(a.keys & b.keys)


def trace_of(res: Interleaving) -> list[Call]:
    """The calls of one run, in turn order; every call must have been gated (given a turn)."""
    h = res.history
    free = h[h["turn"].isna()]
    if len(free):
        actor = str(free["actor"].iloc[0])
        raise RaceError(
            f"actor {actor!r} made more calls than explore gave it turns (order {res.label!r}); "
            "a retry loop that never ends? Raise max_calls if the actor really makes that many."
        )
    rows = h.sort_values("turn")
    return [
        Call.of(str(a), str(op), str(k or ""))
        for a, op, k in zip(rows["actor"], rows["operation"], rows["key"], strict=True)
    ]


def nondeterministic(prefix: Sequence[str], call: Call, before: Call | None) -> RaceError:
    """The error for an actor that made ``call`` where an earlier run with the same ``prefix`` made ``before``."""
    earlier = before.label() if before is not None else "no call (it had finished)"
    return RaceError(
        f"actor {call.actor!r} is not deterministic: at step {len(prefix)} of the order "
        f"{' '.join(prefix)!r} it made {call.label()} where an earlier run with the same order made "
        f"{earlier}. Actors must make the same calls given the same answers (no clocks, random "
        "values or shared state between runs; reset everything in setup)."
    )


class BudgetSpent(Exception):
    """Raised by :meth:`OrderRunner.run` when the strategy has used up the runs it was given."""


class OrderRunner(Protocol):
    """What a strategy needs: run an order, learn the calls it made, count the runs so far."""

    @property
    def runs(self) -> int:
        """How many runs have been made (by every strategy that used this runner)."""
        ...

    def run(self, order: Sequence[str], limit: int, prefer: Sequence[str] = (), exact: bool = False) -> list[Call]:
        """One real run of ``order`` and a continuation; the calls it made, in turn order.

        ``prefer``: actors to continue with first; ``exact``: every turn of ``order`` was a call
        an earlier run made, so it must be taken. Raises :class:`BudgetSpent` once ``limit`` runs
        were made; raises whatever ends the exploration (a violated invariant) otherwise.
        """
        ...


__all__ = [
    "READS",
    "WHOLE_TABLE",
    "BudgetSpent",
    "Call",
    "OrderRunner",
    "conflicts",
    "nondeterministic",
    "trace_of",
]
