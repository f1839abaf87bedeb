"""Systematic exploration of interleavings: exhaustive while cheap, then DPOR, then PCT sampling.

``all_interleavings`` tries every order of the actors' DynamoDB calls, which is fine for two actors
of two calls (6 orders) and hopeless soon after (3 x 3 calls: 1,680 orders; 3 x 4: 34,650).
:func:`explore` runs the same real requests through the same gate (``run_interleaving``), but picks
the orders it runs:

``exhaustive``
    every order of the calls each actor makes alone (``count_calls``) — used while that number is
    at most ``exhaustive_limit``. Guarantee: ``"all N orders explored"``.
``dpor``
    dynamic partial-order reduction (source sets and sleep sets, Abdulla et al. 2014; the idea
    tokio-rs/loom uses): two calls *conflict* when they come from different actors, touch the same
    item key (``call_key``) and at least one of them writes. Orders that differ only in the
    relative order of non-conflicting calls end in the same state, so one of them is enough.
    Reads are GetItem, Query, Scan, BatchGetItem and TransactGetItems; every other operation
    counts as a write. Query, Scan, batch calls and calls without a key touch the whole table.
    Guarantee: ``"all non-equivalent orders explored (DPOR): N runs"``.
``pct``
    seeded random sampling with at most ``depth - 1`` preemptions per run (probabilistic
    concurrency testing, Burckhardt et al. 2010; awslabs/shuttle, Microsoft Coyote): a bug that
    needs d - 1 preemptions is found by each run with probability at least 1 / (n k^(d-1)) for n
    actors and k calls. Guarantee: ``"N sampled orders, seed S, depth d"`` — a sample, not a proof.

``strategy="auto"`` uses exhaustive while the count is at most ``exhaustive_limit``, else DPOR
with up to half the budget, and PCT with what is left if DPOR did not finish.

Every run is one ``run_interleaving`` call with ``strict=False`` and an order long enough for every
call an actor makes (``max_calls`` turns each after the explored prefix), so *every* call is gated.
The counterexample is the order of all the calls that run took: ``run_interleaving(actors,
result.counterexample, conn=conn)`` after ``setup()`` replays it exactly.

``faults=["lose-response", "transaction-conflict"]`` (any of :data:`~labkit.races.scenarios.EXPLORE_FAULTS`)
explores each order once with no fault and once per *scenario*: one fault at one call point of
one actor (:mod:`~labkit.races.scenarios`), injected by the race lab (:mod:`labkit.faults`). The
strategy runs scenario after scenario (no fault first); exhaustive needs orders x scenarios runs
and refuses a budget they overflow, DPOR explores each scenario's own calls (a retry a fault
causes is one more call), PCT gives each scenario an equal share of what is left. The failing
run's fault is ``result.faults``: ``run_interleaving(actors, result.counterexample, conn=conn,
faults=list(result.faults))`` after ``setup()`` replays it.

Actors must be deterministic: given the same answers from DynamoDB they make the same calls.
:func:`explore` checks this on every run (the same order prefix must give the same calls) and
raises :class:`~labkit.errors.RaceError` naming the actor and the step when it does not.

This module only orchestrates: it checks the arguments, counts the orders, picks the strategy
and its share of the budget, and builds the :class:`Exploration`. The runs happen in
:class:`~labkit.races.runner.Runner` (the one place an order runs); the strategies live in
:mod:`~labkit.races.strategies` and see the runner only through
:class:`~labkit.races.calls.OrderRunner`, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..validation import check_callable, check_choice, check_int, check_positive
from .calls import READS, BudgetSpent, Call, conflicts
from .interleave import Interleaving, check_actors
from .orders import check_call_counts, count_calls, count_orders, solo_operations
from .runner import Runner, Violation
from .scenarios import check_fault_names, describe, fault_scenarios
from .strategies import dpor, exhaustive, pct

if TYPE_CHECKING:
    from ..backend import Connection
    from .types import Actor

STRATEGIES = ("auto", "exhaustive", "dpor", "pct")


@dataclass(frozen=True)
class Exploration:
    """What :func:`explore` found: a verdict, a replayable counterexample, and what it is worth."""

    passed: bool
    #: the order of every call in the failing run (``"A B A C ..."``), or None when it passed
    counterexample: str | None
    runs: int
    guarantee: str
    strategy: str
    #: every order of the dry-run call counts (what exhaustive search would run)
    orders: int
    calls: dict[str, int]
    seed: int | None = None
    #: the invariant's message for the failing run
    message: str | None = None
    #: the failing run itself (history, results, errors), for a timeline
    interleaving: Interleaving | None = field(default=None, repr=False)
    #: the fault of the failing run (``("B2: lose-response",)``), empty when it had none
    faults: tuple[str, ...] = ()
    #: how many fault scenarios each order was explored in (1: no faults asked for)
    scenarios: int = 1

    def __bool__(self) -> bool:
        return self.passed

    @property
    def scenario(self) -> str | None:
        """The counterexample and its fault: ``"'A B A B' with B2: lose-response"``."""
        if self.counterexample is None:
            return None
        return f"{self.counterexample!r}" + (f" with {', '.join(self.faults)}" if self.faults else "")

    def summary(self) -> str:
        if self.passed:
            return f"passed: {self.guarantee}"
        faults = f", faults={list(self.faults)!r}" if self.faults else ""
        found = f" in {self.scenario}" if self.faults else ""
        return (
            f"FAILED after {self.runs} run(s) ({self.strategy}){found}: {self.message}\n"
            f"  replay: run_interleaving(actors, {self.counterexample!r}, conn=conn{faults})"
        )


def _check_explore_actors(actors: Mapping[str, Actor]) -> None:
    if not isinstance(actors, Mapping) or len(actors) < 2:
        raise ValidationError("explore needs at least two actors, e.g. {'A': fn_a, 'B': fn_b}")
    check_actors(actors)  # names and callables: the same rules as run_interleaving's


def explore(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None,
    invariant: Callable[[Interleaving], Any],
    budget: int = 500,
    seed: int = 0,
    strategy: str = "auto",
    exhaustive_limit: int = 100,
    depth: int = 3,
    max_calls: int = 20,
    calls: Mapping[str, int] | None = None,
    timeout: float = 10.0,
    faults: Sequence[str] | None = None,
) -> Exploration:
    """Run the actors in chosen orders until ``invariant`` fails or the guarantee is reached.

    ``setup()`` runs before every order and must put the table back into the same state.
    ``invariant(res)`` judges one run (an :class:`~labkit.races.Interleaving`): it fails by
    returning ``False`` or raising ``AssertionError`` (its message becomes ``.message``); anything
    else (``True``, ``None``) passes. ``budget`` caps the runs; ``seed`` and ``depth`` drive PCT;
    ``max_calls`` caps the calls one actor makes in one run. The result is truthy when it passed.
    ``faults`` (e.g. ``["lose-response", "transaction-conflict"]``) also explores, for each order,
    one fault at each call point of each actor (:mod:`~labkit.races.scenarios`); the failing run's
    fault is ``.faults`` and replays with ``run_interleaving(..., faults=list(result.faults))``.
    """
    _check_explore_actors(actors)
    check_choice("strategy", strategy, STRATEGIES)
    check_callable("invariant", invariant, "a function of one Interleaving that returns False or raises AssertionError")
    check_callable("setup", setup, "a function of no arguments", optional=True)
    check_int("budget", budget, least=1)
    check_int("seed", seed, least=0)
    check_int("exhaustive_limit", exhaustive_limit, least=0)
    check_int("depth", depth, least=1)
    check_int("max_calls", max_calls, least=1)
    check_positive("timeout", timeout)
    fault_names = check_fault_names(faults)
    if fault_names:  # the call points come from each actor's solo run
        operations = solo_operations(actors, conn=conn, setup=setup, timeout=timeout)
        found = {name: len(ops) for name, ops in operations.items()}
        calls = found if calls is None else check_call_counts(calls, actors, least=1)
        scenarios = fault_scenarios(operations, fault_names)
    else:
        calls = (
            count_calls(actors, conn=conn, setup=setup, timeout=timeout)
            if calls is None
            else check_call_counts(calls, actors, least=1)
        )
        scenarios = [()]
    total = count_orders(calls)
    n_scen = len(scenarios)
    shape = " + ".join(f"{name}: {n}" for name, n in sorted(calls.items()))
    with_faults = f", with {describe(scenarios, fault_names)}" if fault_names else ""
    if strategy == "exhaustive" and total * n_scen > budget:
        times = (
            f" x {n_scen:,} fault scenarios ({describe(scenarios, fault_names)}) = {total * n_scen:,} runs"
            if fault_names
            else ""
        )
        raise ValidationError(
            f"{len(calls)} actors with {shape} calls have {total:,} orders{times}, more than budget={budget:,}; "
            "use strategy='dpor' (explores one order per class of equivalent orders) or 'pct' "
            f"(samples), or raise budget to {total * n_scen:,}"
        )

    runner = Runner(actors, conn, setup, invariant, timeout, max_calls)
    used = strategy
    guarantee = ""
    try:
        if strategy == "exhaustive" or (strategy == "auto" and total * n_scen <= min(exhaustive_limit, budget)):
            used = "exhaustive"
            for scenario in scenarios:
                runner.use(scenario)
                exhaustive(runner, calls, budget)
            guarantee = f"all {total:,} orders explored{with_faults}" + (
                f": {runner.runs:,} runs" if fault_names else ""
            )
        elif strategy in ("dpor", "auto"):
            used = "dpor"
            share = budget if strategy == "dpor" else max(budget // 2, 1)
            try:
                for scenario in scenarios:
                    runner.use(scenario)
                    dpor(runner, share)
                guarantee = f"all non-equivalent orders explored (DPOR){with_faults}: {runner.runs:,} runs"
            except BudgetSpent:
                if strategy == "dpor":
                    where = (
                        f" ({describe(scenarios, fault_names)}: the budget ran out in scenario "
                        f"{scenarios.index(runner.faults) + 1:,} of {n_scen:,})"
                        if fault_names
                        else ""
                    )
                    raise ValidationError(
                        f"{len(calls)} actors with {shape} calls ({total:,} orders) need more than "
                        f"budget={budget:,} DPOR runs to cover every non-equivalent order{where}; raise budget, "
                        "use fewer actors, calls or faults, or use strategy='pct' to sample"
                    ) from None
                used = "pct"
        if used == "pct" or strategy == "pct":
            used = "pct"
            dpor_runs = runner.runs
            more = True
            for i, scenario in enumerate(scenarios):  # an equal share of what is left for each scenario
                runner.use(scenario)
                end = min(runner.runs + max((budget - runner.runs) // (n_scen - i), 1), budget)
                more = pct(runner, calls, depth, seed, end) and more
            sampled = runner.runs - dpor_runs
            guarantee = f"{sampled:,} sampled orders, seed {seed}, depth {depth}"
            if fault_names:
                guarantee += f", over {describe(scenarios, fault_names)}"
            if not more:
                guarantee += " (no new schedule in 2,000 more draws)"
            if dpor_runs:
                guarantee += f" (after {dpor_runs:,} DPOR runs that did not cover every class)"
    except Violation as violation:
        res = violation.res
        return Exploration(
            passed=False,
            counterexample=" ".join(res.turns),
            runs=runner.runs,
            guarantee=f"counterexample found in run {runner.runs:,} ({used})",
            strategy=used,
            orders=total,
            calls=calls,
            seed=seed if used == "pct" else None,
            message=violation.message,
            interleaving=res,
            faults=runner.faults,
            scenarios=n_scen,
        )
    except BudgetSpent:  # exhaustive within its budget cannot get here; kept for safety
        pass
    return Exploration(
        passed=True,
        counterexample=None,
        runs=runner.runs,
        guarantee=guarantee,
        strategy=used,
        orders=total,
        calls=calls,
        seed=seed if used == "pct" else None,
        scenarios=n_scen,
    )


__all__ = ["READS", "STRATEGIES", "Call", "Exploration", "conflicts", "count_orders", "explore"]
