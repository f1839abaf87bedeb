"""Calls of an explored run, when two of them conflict, and what a strategy asks of the runner.

This is the ground :mod:`~labkit.races.strategies` (exhaustive, DPOR, PCT) and
:mod:`~labkit.races.runner` both stand on; neither imports the other. A strategy is handed a
runner typed by :class:`OrderRunner` and calls ``runner.run(order, limit)``; the runner raises
:class:`BudgetSpent` when the strategy has used the runs it was given.

Two calls *conflict* when they come from the same task (program order), or touch a common item
and at least one of them writes it — items named by the table's key schema
(:mod:`~labkit.races.identity`), never by the attributes a request happens to carry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import RaceError
from .identity import TOKENS, Access, KeyNames, accesses, conflict

#: (region, table) -> the table's key attributes, or None when it cannot be described.
SchemaLookup = Callable[[str | None, str], "KeyNames | None"]


@dataclass(frozen=True)
class Call:
    """One DynamoDB call as exploration sees it: which task made it, what, on which items."""

    actor: str
    operation: str
    #: the history's human-readable key (``call_key``): for messages only
    key: str
    touches: frozenset[Access]
    #: calls of other tasks that had to come first (a start, a join, a notify): task -> how many
    deps: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    #: the task's own number of this call (0-based)
    seq: int = field(default=0, compare=False)
    #: the ClientRequestTokens it sends (random per run in most code: not part of what the call is)
    tokens: frozenset[str] = field(default=frozenset(), compare=False)

    @classmethod
    def of(cls, record: Mapping[str, Any], schemas: SchemaLookup) -> Call:
        """The call a gated run recorded (operation, params, region, actor, key, deps)."""
        region = record.get("region")
        found = accesses(str(record["operation"]), record.get("params") or {}, lambda t: schemas(region, t))
        tokens = frozenset(a.hash[1] for a in found if a.table == TOKENS and a.hash is not None)
        deps = tuple(sorted((str(k), int(v)) for k, v in (record.get("deps") or {}).items() if v))
        return cls(
            str(record["actor"]),
            str(record["operation"]),
            str(record.get("key") or ""),
            frozenset(a for a in found if a.table != TOKENS),
            deps,
            int(record.get("seq") or 0),
            tokens,
        )

    @property
    def write(self) -> bool:
        return any(a.write for a in self.touches)

    def label(self) -> str:
        """``GetItem(ACCT#1/PROFILE)``, or the operation alone for a call without a key."""
        return f"{self.operation}({self.key})" if self.key else self.operation


def conflicts(a: Call, b: Call) -> bool:
    """Same task (program order), or a common item that at least one of the two writes."""
    if a.actor == b.actor:
        return True
    return conflict(a.touches, b.touches) or bool(a.tokens & b.tokens)  # one token: DynamoDB's idempotency check


@dataclass(frozen=True)
class Trace:
    """One explored run: its calls in turn order, and at each turn every waiting task's call.

    ``enabled[i]`` maps each task that waited at turn i to the call it waited with (``calls[i]``
    among them); it is empty for a turn the order forced before every task stood still (a
    replayed prefix: the strategy knows those states from the runs that found them).
    """

    calls: list[Call]
    enabled: list[dict[str, Call]]
    turns: tuple[str, ...]
    #: this run showed that the scenario's calls conflict more than earlier runs were told (a stale
    #: read landed on a read of other tables): a strategy that reasons about conflicts starts again
    widened: bool = False

    def __len__(self) -> int:
        return len(self.calls)


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
    """What a strategy needs: run a schedule, learn the calls it made, count the runs so far."""

    @property
    def runs(self) -> int:
        """How many runs have been made (by every strategy that used this runner)."""
        ...

    def run(self, order: Sequence[str], limit: int, prefer: Sequence[str] = (), exact: bool = True) -> Trace:
        """One real run: ``order`` first, then the waiting task ``prefer`` names first (else by name).

        ``exact``: every turn of ``order`` is a call an earlier run made after the same turns,
        so each must be taken as given (otherwise a turn whose task cannot take it yet goes to
        the next turn of the order that can). Raises :class:`BudgetSpent` once ``limit`` runs
        were made; raises whatever ends the exploration (a violated invariant) otherwise.
        """
        ...


__all__ = [
    "BudgetSpent",
    "Call",
    "OrderRunner",
    "SchemaLookup",
    "Trace",
    "conflicts",
    "nondeterministic",
]
