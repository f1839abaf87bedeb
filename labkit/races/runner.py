"""The runner: the one place an explored order really runs (setup, the run, the invariant, determinism).

:func:`~labkit.races.explore` makes one :class:`Runner` and hands it to a strategy
(:mod:`~labkit.races.strategies`), which sees it only as an :class:`~labkit.races.calls.OrderRunner`.
Each :meth:`Runner.run` is one ``run_interleaving`` call with ``strict=False`` and an order long
enough for every call an actor makes (``max_calls`` turns each after the explored prefix), so every
call is gated and the run's calls come back in turn order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import RaceError
from .calls import BudgetSpent, Call, nondeterministic, trace_of
from .interleave import Interleaving, run_interleaving

if TYPE_CHECKING:
    from ..backend import Connection
    from .types import Actor


class Violation(Exception):
    """A run broke the invariant: ends the exploration with ``res`` as the counterexample."""

    def __init__(self, res: Interleaving, message: str) -> None:
        super().__init__(message)
        self.res = res
        self.message = message


class Runner:
    """Runs orders for every strategy: setup, the run, the invariant, the determinism check.

    Implements :class:`~labkit.races.calls.OrderRunner`. ``runs`` counts the runs made so far;
    ``seen`` remembers, for every order prefix, the call made at its end, so an actor that makes
    another call after the same prefix in a later run is caught (:func:`nondeterministic`).
    """

    def __init__(
        self,
        actors: Mapping[str, Actor],
        conn: Connection,
        setup: Callable[[], Any] | None,
        invariant: Callable[[Interleaving], Any],
        timeout: float,
        max_calls: int,
    ) -> None:
        self.actors = actors
        self.conn = conn
        self.setup = setup
        self.invariant = invariant
        self.timeout = timeout
        self.max_calls = max_calls
        self.names = sorted(actors)
        self.runs = 0
        self.seen: dict[tuple[str, ...], Call] = {}  # order prefix -> the call made at its end
        self.faults: tuple[str, ...] = ()  # the fault scenario of the runs to come

    def use(self, faults: tuple[str, ...]) -> None:
        """Run the next orders with these faults (a scenario): another program, so determinism restarts."""
        self.faults = tuple(faults)
        self.seen = {}

    def continuation(self, first: Sequence[str]) -> list[str]:
        """Enough turns for every call: the given actors first, then the rest in name order."""
        rest = [n for n in self.names if n not in first]
        return [n for n in [*first, *rest] for _ in range(self.max_calls)]

    def run(self, order: Sequence[str], limit: int, prefer: Sequence[str] = (), exact: bool = False) -> list[Call]:
        """One run of ``order`` then a continuation (``prefer`` first, else the last actor first).

        ``exact``: the order is made of calls earlier runs made, so every turn must be taken
        (otherwise an actor that finishes early just gives up its turns). Returns the run's calls;
        raises :class:`Violation` when the invariant fails, :class:`BudgetSpent` when the runs
        are used up.
        """
        if self.runs >= limit:
            raise BudgetSpent
        if self.setup is not None:
            self.setup()
        self.runs += 1
        tail = self.continuation(prefer or order[-1:])
        try:
            res = run_interleaving(
                self.actors,
                [*order, *tail],
                conn=self.conn,
                timeout=self.timeout,
                strict=False,
                faults=list(self.faults) or None,
            )
        except RaceError as exc:
            with_faults = f" with {', '.join(self.faults)}" if self.faults else ""
            raise RaceError(
                f"explore run {self.runs} (order prefix {' '.join(order)!r}{with_faults}): {exc}"
            ) from exc.__cause__
        trace = trace_of(res)
        self._check_deterministic(order if exact else (), trace)
        verdict = self._judge(res)
        if verdict is not None:
            raise Violation(res, verdict)
        return trace

    def _check_deterministic(self, order: Sequence[str], trace: Sequence[Call]) -> None:
        taken = tuple(c.actor for c in trace)
        if taken[: len(order)] != tuple(order):
            step = next((i for i, (a, b) in enumerate(zip(taken, order, strict=False)) if a != b), len(taken))
            actor = order[step]
            raise RaceError(
                f"actor {actor!r} is not deterministic: at step {step + 1} of the order "
                f"{' '.join(order)!r} an earlier run had it make another call, this run it had "
                "finished. Actors must make the same calls given the same answers (no clocks, "
                "random values or shared state between runs; reset everything in setup)."
            )
        for i, call in enumerate(trace):
            prefix = taken[: i + 1]
            before = self.seen.setdefault(prefix, call)
            if before != call:
                raise nondeterministic(prefix, call, before)

    def _judge(self, res: Interleaving) -> str | None:
        try:
            verdict = self.invariant(res)
        except AssertionError as exc:
            return str(exc) or "the invariant raised AssertionError"
        if verdict is False:
            return "the invariant returned False"
        return None


__all__ = ["Runner", "Violation"]
