"""Calls of an explored run, when two of them conflict, and what a strategy asks of the runner.

This is the ground :mod:`~labkit.races.strategies` (exhaustive, DPOR, PCT) and
:mod:`~labkit.races.runner` both stand on; neither imports the other. A strategy is a
:class:`Scheduler`; the runner owns the loop (:meth:`~labkit.races.runner.Runner.explore`) and
raises :class:`BudgetSpent` when a scheduler that promises coverage has used the runs it was given.

Two calls *conflict* when they come from the same task (program order), or touch a common item
and at least one of them writes it — items named by the table's key schema
(:mod:`~labkit.races.identity`), never by the attributes a request happens to carry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..shared.errors import RaceError, ValidationError
from ..shared.intercept import CallRecord
from .identity import EVERYTHING, TOKENS, Access, KeyNames, accesses, conflict
from .replication import END, REPLICATE, delivery_access

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
    def of(cls, record: CallRecord, schemas: SchemaLookup) -> Call:
        """The call a gated run recorded (operation, params, region, actor, key, deps)."""
        if record.operation == END:  # a run's end with deliveries pending: it meets every delivery (and reads)
            deps = tuple(sorted((str(k), int(v)) for k, v in record.deps.items() if v))
            return cls(record.actor, END, "", frozenset({Access(EVERYTHING, None, None, False)}), deps, record.seq)
        if record.operation == REPLICATE:  # a delivery step: it writes its item (labkit.races.replication)
            touches = delivery_access(record.params, lambda t: schemas(record.region, t))
            deps = tuple(sorted((str(k), int(v)) for k, v in record.deps.items() if v))
            return cls(record.actor, REPLICATE, record.key, touches, deps, record.seq)
        found = accesses(record.operation, record.params, lambda t: schemas(record.region, t))
        tokens = frozenset(a.hash[1] for a in found if a.table == TOKENS and a.hash is not None)
        deps = tuple(sorted((str(k), int(v)) for k, v in record.deps.items() if v))
        return cls(
            record.actor,
            record.operation,
            record.key,
            frozenset(a for a in found if a.table != TOKENS),
            deps,
            record.seq,
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


def nondeterministic_turn(order: Sequence[str], pos: int, state: str) -> RaceError:
    """The error for forced turn ``pos``, which its task could not take this run (``state``: why)."""
    return RaceError(
        f"actor {order[pos]!r} is not deterministic: at step {pos + 1} of the order "
        f"{' '.join(order)!r} an earlier run had it make another call, this run {state}. "
        "Actors must make the same calls given the same answers (no clocks, random values or "
        "shared state between runs; reset everything in setup)."
    )


class BudgetSpent(Exception):
    """Raised by the runner when a scheduler that promises coverage has used up the runs it was given."""


@dataclass(frozen=True)
class Coverage:
    """What one scheduler covered of one fault scenario: every order (or class) it promises, or a sample."""

    #: True: every order (exhaustive) or every class of equivalent orders (DPOR) was run
    complete: bool
    #: a sampler that ran out of new schedules before its budget: there were no more to draw
    drawn_out: bool = False


class Scheduler(Protocol):
    """Who goes next: the one decision a schedule is made of (awslabs/shuttle's ``Scheduler``).

    The runner asks :meth:`new_run` before each run, follows the turns it forces (each a call an
    earlier run made after the same turns when ``exact``; a sample's wish list otherwise), asks
    :meth:`next_task` at each quiet point after them, and hands the run's calls to
    :meth:`end_run`. :meth:`new_scenario` starts the next fault scenario. Everything a scheduler
    says of itself — its ``name`` and ``label``, whether it ``samples`` (a budget spent is its
    end, not a failure), its ``seed``, :meth:`guarantee`, :meth:`over_budget`, its :meth:`share`
    of the runs left — is its own, so :func:`~labkit.races.explore` names none.
    """

    @property
    def name(self) -> str:
        """``exhaustive``, ``dpor``, ``pct``: how results name it (``label``: how sentences do)."""
        ...

    @property
    def label(self) -> str: ...

    @property
    def exact(self) -> bool:
        """Forced turns are calls earlier runs made (True), or a sample's wish list (False)."""
        ...

    @property
    def samples(self) -> bool:
        """A budget spent is its end (a sampler), not a failure to cover what it promises."""
        ...

    @property
    def seed(self) -> int | None: ...

    def new_scenario(self) -> None: ...

    def new_run(self) -> Sequence[str] | None:
        """The turns the next run forces first, or None: nothing left to run (see :meth:`coverage`)."""
        ...

    def next_task(self, waiting: Sequence[str]) -> str:
        """At a quiet point past the forced turns: which of the waiting tasks goes."""
        ...

    def end_run(self, trace: Trace) -> None:
        """Learn from a run's calls (what could have gone at each turn)."""
        ...

    def coverage(self) -> Coverage: ...

    def share(self, left: int, scenarios_left: int) -> int:
        """How many of the ``left`` runs the next scenario may use."""
        ...

    def guarantee(self, runs: int, scenarios: int, with_faults: str, coverage: Coverage) -> str:
        """What ``runs`` runs over ``scenarios`` scenarios proved (``with_faults``: ", with ..." or "")."""
        ...

    def over_budget(self, what: str, budget: int, total: int, where: str) -> ValidationError:
        """The error when the budget ran out before the coverage it promises."""
        ...


__all__ = [
    "BudgetSpent",
    "Call",
    "Coverage",
    "Scheduler",
    "SchemaLookup",
    "Trace",
    "conflicts",
    "nondeterministic",
    "nondeterministic_turn",
]
