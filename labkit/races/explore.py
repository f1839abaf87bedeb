"""Systematic exploration of interleavings: exhaustive while cheap, then DPOR, then PCT sampling.

``all_interleavings`` tries every order of the actors' DynamoDB calls, which is fine for two actors
of two calls (6 orders) and hopeless soon after (3 x 3 calls: 1,680 orders; 3 x 4: 34,650).
:func:`explore` runs the same real requests through the same gate, but picks the schedules it
runs, with one of the strategies of :mod:`~labkit.races.strategies`:

``exhaustive``
    every schedule the actors really have (a depth-first search over the tasks waiting at each
    turn). Guarantee: ``"all N orders explored"``.
``dpor``
    dynamic partial-order reduction (source sets and sleep sets, Abdulla et al. 2014; the idea
    tokio-rs/loom uses): two calls *conflict* when they come from different tasks, touch a common
    item — (table, hash key, range key) from the table's key schema, :mod:`~labkit.races.identity`
    — and at least one of them writes it. Orders that differ only in the relative order of
    non-conflicting calls end in the same state, so one of them is enough. Guarantee:
    ``"all non-equivalent orders explored (DPOR): N runs"``.
``pct``
    seeded random sampling with at most ``depth - 1`` preemptions per run (probabilistic
    concurrency testing, Burckhardt et al. 2010; awslabs/shuttle, Microsoft Coyote). Guarantee:
    ``"N sampled orders, seed S, depth d"`` — a sample, not a proof.

``strategy="auto"`` is a portfolio: exhaustive search (half the budget) while the dry run's orders
are at most ``exhaustive_limit``, then DPOR (a quarter) if the real schedules outgrew that, then
PCT with what is left; with more orders, DPOR with half the budget, then PCT with what is left.

Threads and pool tasks an actor starts are *sub-actors* (``A.1``, ``A.2`` in start order) with
turns of their own, explored like any actor's (:mod:`~labkit.races.tasks`). Every call is gated;
the counterexample is the order of all the calls the failing run took, *shrunk* to the fewest
context switches that still fail (:mod:`~labkit.races.shrink`; the order the search found is
``result.original``): ``run_interleaving(actors, result.counterexample, conn=conn)`` after
``setup()`` replays it exactly, and ``result.save(path)`` writes it to a replay file
(:mod:`~labkit.races.replay`).

``faults=["lose-response", "transaction-conflict"]`` (any of :data:`~labkit.races.scenarios.EXPLORE_FAULTS`)
explores each schedule once with no fault and once per *scenario*: one fault at one call point of
one task (:mod:`~labkit.races.scenarios`). The strategy runs scenario after scenario (no fault
first); exhaustive and DPOR explore each scenario's own calls (a retry a fault causes is one more
call), PCT gives each scenario an equal share of what is left. The failing run's fault is
``result.faults``: ``run_interleaving(actors, result.counterexample, conn=conn,
faults=list(result.faults))`` after ``setup()`` replays it.

The weak answers (``stale-read``, ``unprocessed-items``, ``short-page``; labkit's embedded endpoint
only) are faults like the others: DynamoDB's answer to one call, placed where DynamoDB can give it.
With faults, one actor is enough (a service that reads back its own write races with DynamoDB).
DPOR stays sound with them: a run whose scenario holds a stale read starts from settled images
(the endpoint forgets the images before it, so setup's writes are not what a stale read sees),
and when the stale read is a Query, Scan or BatchGetItem — whose answer undoes the most recent
commit to *any* item it reads — every write to the tables it reads conflicts with every other, so
the order of those writes is explored; which tables those are is learnt from the call the fault
really lands on in each run (tests/races/test_soundness.py checks it against exhaustive search).
A fault is placed per order: where an actor's n-th call is, in some order, one DynamoDB cannot
answer with it, that run goes without it, and a call point that only some orders reach gets its
scenarios when a run first reaches it (:class:`~labkit.races.scenarios.Scenarios`).

Actors must be deterministic: given the same answers from DynamoDB they make the same calls.
:func:`explore` checks this on every run and raises :class:`~labkit.shared.errors.RaceError` naming the
actor and the step when it does not.

This module only orchestrates: it checks the arguments (:class:`ExploreConfig` holds the tuning
knobs), counts the orders, gives each scheduler of the portfolio
(:func:`~labkit.races.strategies.portfolio`) its share of the budget, shrinks a failure, builds
the :class:`Exploration` and tells the listeners. It names no strategy: the loop is
:meth:`~labkit.races.runner.Runner.explore`, and what a scheduler promises is its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..engine_plugins.faults.control import need_weak_answers
from ..engine_plugins.faults.kinds import EMBEDDED_ONLY
from ..shared.errors import ValidationError
from ..shared.validation import check_callable, check_choice, check_int, check_positive
from .anomalies import check_allow
from .calls import BudgetSpent, Call, Coverage, Scheduler, conflicts
from .exploration import Exploration, add_listener, remove_listener, tell
from .interleave import Interleaving, Stage, check_actors
from .orders import SoloCall, check_call_counts, count_orders, solo_calls
from .replication import check_converge
from .runner import Runner, Violation
from .scenarios import Scenario, Scenarios, check_fault_names, describe, fault_scenarios
from .shrink import Shrunk, shrink
from .strategies import AUTO, STRATEGIES, Share, portfolio
from .tasks import sub_actor_of

if TYPE_CHECKING:
    from ..shared.backend import Connection
    from .types import Actor


@dataclass(frozen=True)
class ExploreConfig:
    """explore's tuning knobs, in one place (like loom's ``Builder``); every field is checked.

    ``budget`` caps the exploration's runs; ``strategy`` picks one, or ``auto``'s portfolio;
    ``seed`` and ``depth`` drive PCT; ``exhaustive_limit`` is the most dry-run orders ``auto``
    searches exhaustively; ``max_calls`` caps the calls one task makes in one run; ``calls``
    gives each actor's call count instead of a dry run; ``timeout`` is how long a run may go without
    progress (seconds: no turn taken, no call answered);
    ``shrink_budget`` caps the runs shrinking a counterexample may make (0: do not shrink).
    """

    budget: int = 500
    strategy: str = AUTO
    seed: int = 0
    depth: int = 3
    exhaustive_limit: int = 100
    max_calls: int = 20
    calls: Mapping[str, int] | None = None
    timeout: float = 10.0
    shrink_budget: int = 60

    def __post_init__(self) -> None:
        check_int("budget", self.budget, least=1)
        check_choice("strategy", self.strategy, STRATEGIES)
        check_int("seed", self.seed, least=0)
        check_int("depth", self.depth, least=1)
        check_int("exhaustive_limit", self.exhaustive_limit, least=0)
        check_int("max_calls", self.max_calls, least=1)
        check_positive("timeout", self.timeout)
        check_int("shrink_budget", self.shrink_budget, least=0)

    def but(self, **changes: Any) -> ExploreConfig:
        """A copy with ``changes`` (None values left out)."""
        given = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self, **given) if given else self


def _check_explore_actors(actors: Mapping[str, Actor], faulted: bool) -> None:
    if not isinstance(actors, Mapping) or len(actors) < (1 if faulted else 2):
        raise ValidationError(
            "explore needs at least two actors, e.g. {'A': fn_a, 'B': fn_b} (or one with faults=[...]: "
            "a service that reads back its own write races with DynamoDB, not with another caller)"
        )
    check_actors(actors)  # names and callables: the same rules as run_interleaving's


def explore(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None,
    invariant: Callable[[Interleaving], Any] | None = None,
    faults: Sequence[str] | str | None = None,
    budget: int | None = None,
    strategy: str | None = None,
    seed: int | None = None,
    config: ExploreConfig | None = None,
    allow: Sequence[str] | None = None,
    converge: bool = True,
) -> Exploration:
    """Run the actors in chosen orders until ``invariant`` fails or the guarantee is reached.

    ``setup()`` runs before every order and must put the table back into the same state.
    ``invariant(res)`` judges one run (an :class:`~labkit.races.Interleaving`): it fails by
    returning ``False`` or raising ``AssertionError`` (its message becomes ``.message``); anything
    else (``True``, ``None``) passes. The result is truthy when it passed. ``faults`` (e.g.
    ``["lose-response", "transaction-conflict"]``) also explores, for each order, one fault at
    each call point of each actor (:mod:`~labkit.races.scenarios`); the failing run's fault is
    ``.faults`` and replays with ``run_interleaving(..., faults=list(result.faults))``.
    ``budget``, ``strategy`` and ``seed`` override the same fields of ``config``
    (:class:`ExploreConfig`: every other tuning knob).

    Every run's history is also read for the anomalies of :mod:`~labkit.races.anomalies` (a lost
    update, a check-then-write duplicate, a write applied twice, dropped batch items, a page taken
    as the whole): with an invariant they are reported beside its verdict (``.anomalies``, and in
    ``summary()``); with ``invariant`` omitted, a run that shows one fails the exploration as a
    broken invariant would, its ``.message`` naming the anomaly and its calls. ``allow=[...]``
    names anomalies the code means (``["lost-update"]``): they are not reported.

    On labkit's embedded endpoint replication is held while it explores: each delivery of a write to
    a global table is a step the schedule orders like a call (``[A1 -> us-east-1]``,
    :mod:`~labkit.races.replication`); deliveries a run never made are made before it is judged (the
    replicas converge), unless ``converge=False``.
    """
    _check_explore_actors(actors, bool(faults))
    check_callable(
        "invariant",
        invariant,
        "a function of one Interleaving that returns False or raises AssertionError (or omit it: the anomalies decide)",
        optional=True,
    )
    allowed = check_allow(allow)
    check_converge(converge)
    check_callable("setup", setup, "a function of no arguments", optional=True)
    if config is not None and not isinstance(config, ExploreConfig):
        raise ValidationError(f"config is {type(config).__name__}, not an ExploreConfig(...)")
    cfg = (config or ExploreConfig()).but(budget=budget, strategy=strategy, seed=seed)
    fault_names = check_fault_names(faults, embedded=conn.backend == "embedded")
    need_weak_answers(conn, [f for f in fault_names if f in EMBEDDED_ONLY])
    lab = Stage.of(actors, conn, converge=converge)  # the lab's clients, made once for every run
    with lab.replication.held() if lab.replication is not None else contextlib.nullcontext():
        try:
            return _explore_held(actors, conn, setup, invariant, cfg, fault_names, lab, allowed)
        finally:
            if lab.replication is not None and not converge:
                lab.replication.settle()  # the last run's leftovers: setup() then a replay starts converged


def _explore_held(
    actors: Mapping[str, Actor],
    conn: Connection,
    setup: Callable[[], Any] | None,
    invariant: Callable[[Interleaving], Any] | None,
    cfg: ExploreConfig,
    fault_names: tuple[str, ...],
    lab: Stage,
    allowed: frozenset[str],
) -> Exploration:
    """explore's work, its arguments checked (replication held, when the endpoint has it)."""
    given = None
    scenarios: list[Scenario]
    points: dict[str, list[SoloCall]] = {}
    if cfg.calls is not None:  # checked before anything runs; sub-actors may be counted too
        given = check_call_counts(
            cfg.calls, actors, least=1, also=[n for n in cfg.calls if sub_actor_of(n, list(actors))]
        )
    if given is not None and not fault_names:
        calls, scenarios, tasks = given, [()], list(given)
    else:  # the call points come from each actor's solo run
        points = solo_calls(actors, conn=conn, setup=setup, timeout=cfg.timeout, stage=lab)
        calls = given or {name: len(ops) for name, ops in points.items()}
        scenarios = Scenarios(fault_scenarios(points, fault_names), fault_names) if fault_names else [()]
        tasks = [*calls, *(name for name in points if name not in calls)]
    total = count_orders(calls)
    shape = " + ".join(f"{name}: {n}" for name, n in sorted(calls.items()))
    times = f" x {len(scenarios):,} fault scenarios ({describe(scenarios, fault_names)})" if fault_names else ""
    what = f"{len(actors)} actors with {shape} calls"
    shares = portfolio(
        cfg.strategy, cfg.budget, cfg.exhaustive_limit, cfg.depth, cfg.seed, calls, len(scenarios), what, times
    )
    runner = Runner(
        actors, conn, setup, invariant, cfg.timeout, cfg.max_calls, names=tasks, points=points, lab=lab, allow=allowed
    )
    if isinstance(scenarios, Scenarios):
        runner.scenarios = scenarios
    try:
        result = _explore(runner, cfg, shares, calls, total, scenarios, fault_names, shape, actors)
    finally:
        runner.close()
    tell(result)
    return result


def _explore(
    runner: Runner,
    cfg: ExploreConfig,
    shares: list[Share],
    calls: dict[str, int],
    total: int,
    scenarios: list[Scenario],
    fault_names: tuple[str, ...],
    shape: str,
    actors: Mapping[str, Actor],
) -> Exploration:
    base = {"orders": total, "calls": calls, "scenarios": len(scenarios), "actors": tuple(actors)}
    used = shares[0].scheduler
    try:
        for number, share in enumerate(shares):
            used = share.scheduler
            start = runner.runs
            end = min(start + share.budget, cfg.budget)
            try:
                coverage = _run_stage(runner, used, scenarios, end)
            except BudgetSpent:
                if number + 1 == len(shares):
                    raise _over_budget(cfg, used, len(actors), shape, total, scenarios, fault_names, runner) from None
                continue
            if not coverage.complete and runner.runs == start:
                raise ValidationError(
                    f"budget={cfg.budget:,} was used up before {used.name} could run: the strategies "
                    f"before it did not cover every order of {len(actors)} actors with {shape} calls; raise budget"
                )
            if coverage.complete or number + 1 == len(shares):
                with_faults = f", with {describe(scenarios, fault_names)}" if fault_names else ""
                guarantee = used.guarantee(runner.runs - start, len(scenarios), with_faults, coverage)
                if not coverage.complete and start:
                    spent = " and ".join(s.scheduler.label for s in shares[:number])
                    guarantee += f" (after {start:,} {spent} runs that did not cover every class)"
                return Exploration(
                    passed=True,
                    counterexample=None,
                    runs=runner.runs,
                    guarantee=guarantee,
                    strategy=used.name,
                    seed=used.seed,
                    anomalies=tuple(runner.anomalies.values()),
                    **base,  # type: ignore[arg-type]
                )
    except Violation as violation:
        return _failure(runner, cfg, violation, used, base)
    raise AssertionError("unreachable: the last stage of a portfolio always answers")  # pragma: no cover


def _run_stage(runner: Runner, scheduler: Scheduler, scenarios: list[Scenario], end: int) -> Coverage:
    """One scheduler over every fault scenario (no fault first), each with its share of the runs up to ``end``."""
    complete, drawn_out = True, True
    for i, scenario in enumerate(scenarios):
        runner.use(scenario)
        limit = min(runner.runs + scheduler.share(end - runner.runs, len(scenarios) - i), end)
        coverage = runner.explore(scheduler, limit)
        complete = complete and coverage.complete
        drawn_out = drawn_out and coverage.drawn_out
    return Coverage(complete, drawn_out)


def _over_budget(
    cfg: ExploreConfig,
    scheduler: Scheduler,
    n_actors: int,
    shape: str,
    total: int,
    scenarios: list[Scenario],
    fault_names: tuple[str, ...],
    runner: Runner,
) -> ValidationError:
    """A strategy asked for by name that cannot cover what it promises within the budget: never a silent pass."""
    where = (
        f" ({describe(scenarios, fault_names)}: the budget ran out in scenario "
        f"{scenarios.index(runner.faults) + 1:,} of {len(scenarios):,})"
        if fault_names
        else ""
    )
    return scheduler.over_budget(f"{n_actors} actors with {shape}", cfg.budget, total, where)


def _failure(
    runner: Runner, cfg: ExploreConfig, violation: Violation, used: Scheduler, base: dict[str, Any]
) -> Exploration:
    """The failing run, shrunk within its own budget."""
    res = violation.res
    order = tuple(res.turns)
    found_faults = runner.faults
    runs = runner.runs
    shrunk: Shrunk | None = None
    if cfg.shrink_budget:
        shrunk = shrink(runner, order, found_faults, res, violation.message, cfg.shrink_budget)
    final_order = shrunk.order if shrunk is not None else order
    anomalies = list(runner.anomalies.values())
    if runner.invariant is None:  # the failing run's own anomalies first, as shrinking left it
        final = shrunk.res if shrunk is not None else res
        shown = [
            replace(a, faults=shrunk.faults if shrunk is not None else found_faults) for a in runner.anomalies_of(final)
        ]
        anomalies = shown + [a for a in anomalies if a.kind not in {b.kind for b in shown}]
    return Exploration(
        passed=False,
        counterexample=" ".join(final_order),
        runs=runs,
        guarantee=f"counterexample found in run {runs:,} ({used.name})",
        strategy=used.name,
        seed=used.seed,
        message=shrunk.message if shrunk is not None else violation.message,
        interleaving=shrunk.res if shrunk is not None else res,
        faults=shrunk.faults if shrunk is not None else found_faults,
        original=" ".join(order),
        original_faults=found_faults,
        shrink=shrunk.statement() if shrunk is not None else "not shrunk: shrink_budget=0",
        shrink_runs=shrunk.runs if shrunk is not None else 0,
        anomalies=tuple(anomalies),
        **base,
    )


__all__ = [
    "STRATEGIES",
    "Call",
    "ExploreConfig",
    "Exploration",
    "add_listener",
    "conflicts",
    "count_orders",
    "explore",
    "remove_listener",
    "tell",
]
