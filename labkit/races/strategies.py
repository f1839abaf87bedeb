"""The schedulers :func:`labkit.races.explore` composes: exhaustive search, DPOR, PCT sampling.

One decision makes a schedule: *who goes next*. Each strategy is a
:class:`~labkit.races.calls.Scheduler` (awslabs/shuttle's ``Scheduler``: ``new_execution`` /
``next_task``): :meth:`new_run` says how a run begins (the turns it forces — a prefix earlier runs
made — or None once there is nothing left to run), :meth:`next_task` answers at each quiet point
past them (every task stands still; the tasks waiting there are the only ones that can go), and
:meth:`end_run` learns from the run's calls. A scheduler keeps its own state between runs; the
runner (:meth:`~labkit.races.runner.Runner.explore`) owns the loop, runs, judges and checks
determinism, once. ``explore(strategy="auto")`` is a *portfolio* (:func:`portfolio`): an ordered
list of schedulers, each with its share of the budget, the next taking over when one runs out
(shuttle's ``PortfolioRunner``). This module never imports the runner, and the runner never
imports it; :mod:`~labkit.races.explore` hands one to the other and names no strategy: what each
promises (:meth:`guarantee`) and what it says when the budget is too small
(:meth:`over_budget`) are its own.

A run's turns are chosen when every task stands still, among the tasks waiting at a call
(:mod:`~labkit.races.gate`), and the run reports them: so exhaustive search and DPOR branch
only on what could really have gone next — an actor's thread that is not started yet, or an
actor waiting for its thread to end, is never given a turn it cannot take.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..shared.errors import ValidationError
from .calls import Call, Coverage, Scheduler, Trace, conflicts
from .choosers import prefer
from .orders import count_orders

#: ``explore(strategy=...)``: a portfolio, or one scheduler by name.
AUTO = "auto"
STRATEGIES = (AUTO, "exhaustive", "dpor", "pct")


class _Search:
    """What exhaustive search and DPOR share: each run forces the prefix of choices ``order`` (None: done)."""

    exact = True
    samples = False
    seed: int | None = None

    def __init__(self) -> None:
        self.new_scenario()

    def new_scenario(self) -> None:
        self.order: list[str] | None = []

    def new_run(self) -> Sequence[str] | None:
        return self.order

    def coverage(self) -> Coverage:
        return Coverage(complete=self.order is None)

    def share(self, left: int, scenarios_left: int) -> int:
        return left


class Exhaustive(_Search):
    """Every schedule the actors really have: a depth-first search over the tasks waiting at each turn.

    Each run follows a prefix of choices, then takes the first waiting task by name; the next
    run changes the deepest choice that has an untried alternative. An actor that stops early or
    retries gives the schedules it really gives (not the orders of a dry run's call counts).
    """

    name = "exhaustive"
    label = "exhaustive"

    def new_scenario(self) -> None:
        super().new_scenario()
        self.stack: list[tuple[list[str], int]] = []  # per turn: the waiting tasks (sorted), the one chosen

    def next_task(self, waiting: Sequence[str]) -> str:
        return prefer((), waiting)

    def end_run(self, trace: Trace) -> None:
        assert self.order is not None
        stack = self.stack
        for i in range(len(self.order), len(trace)):
            names = sorted(trace.enabled[i])
            stack.append((names, names.index(trace.calls[i].actor)))
        del stack[len(trace) :]
        while stack and stack[-1][1] + 1 >= len(stack[-1][0]):
            stack.pop()
        if not stack:
            self.order = None
            return
        names, chosen = stack[-1]
        stack[-1] = (names, chosen + 1)
        self.order = [waiting[i] for waiting, i in stack]

    def guarantee(self, runs: int, scenarios: int, with_faults: str, coverage: Coverage) -> str:
        count = f"all {runs // max(scenarios, 1):,} orders explored" if not with_faults else "all orders explored"
        return count + with_faults + (f": {runs:,} runs" if with_faults else "")

    def over_budget(self, what: str, budget: int, total: int, where: str) -> ValidationError:
        return ValidationError(
            f"{what} calls have more schedules than budget={budget:,} (their dry run has {total:,} orders; "
            f"retries and threads make more){where}; use strategy='dpor' (explores one order per class of "
            "equivalent orders) or 'pct' (samples), or raise budget"
        )


class _HappensBefore:
    """Vector clocks over one trace: i -> j iff a chain of program order, conflicts or starts/joins leads there."""

    def __init__(self, trace: Sequence[Call]) -> None:
        self.trace = trace
        self.clocks: list[dict[str, int]] = []
        last: dict[str, int] = {}
        at: dict[tuple[str, int], int] = {}
        for k, call in enumerate(trace):
            preds = {j for j in range(k) if trace[j].actor != call.actor and conflicts(trace[j], call)}
            if call.actor in last:
                preds.add(last[call.actor])
            for task, n in call.deps:  # a start, a join, a notify: the task's first n calls came first
                j = at.get((task, n - 1))
                if j is not None:
                    preds.add(j)
            clock: dict[str, int] = {}
            for j in preds:
                for actor, pos in self.clocks[j].items():
                    if clock.get(actor, -1) < pos:
                        clock[actor] = pos
            clock[call.actor] = k
            self.clocks.append(clock)
            last[call.actor] = k
            at[(call.actor, call.seq)] = k

    def __call__(self, i: int, j: int) -> bool:
        return i < j and self.clocks[j].get(self.trace[i].actor, -1) >= i


@dataclass
class _Node:
    """A state on the DPOR path: each waiting task's next call, backtrack and sleep sets."""

    next: dict[str, Call]
    backtrack: set[str]
    sleep: dict[str, Call]
    chosen: str | None


class DPOR(_Search):
    """Source-DPOR with sleep sets (Abdulla et al. 2014): one real run per explored maximal trace.

    Two orders that differ only in the order of non-conflicting calls end in the same state, so
    one of them is enough. The tasks that can go at a state are the ones that waited there (the
    run reports them); the happens-before order adds, to program order and conflicts, what a start,
    a join or a notify imposes. When none of a race's initials could go at the state it must be
    reversed from, every task that could is tried there (conservative). A run whose trace is
    ``widened`` (its conflicts grew: a stale read met another table) starts the scenario again.
    """

    name = "dpor"
    label = "DPOR"

    def new_scenario(self) -> None:
        super().new_scenario()
        self.path: list[_Node] = []
        self.prefer: list[str] = []

    def next_task(self, waiting: Sequence[str]) -> str:
        return prefer(self.prefer, waiting)

    def end_run(self, trace: Trace) -> None:
        assert self.order is not None
        if trace.widened:  # the conflicts it reasoned with were too narrow: start the scenario again
            self.new_scenario()
            return
        path, calls = self.path, trace.calls
        start = max(len(self.order) - 1, 0)
        del path[len(self.order) :]
        blocked = self._extend(path, trace, len(self.order))
        hb = _HappensBefore(calls[:blocked])
        for k in range(start, blocked):  # races of the calls this run made for the first time
            _add_backtracks(path, calls, hb, k)
        for d in range(len(path) - 1, -1, -1):  # the deepest state with a task still to explore
            node = path[d]
            todo = sorted((node.backtrack & set(node.next)) - set(node.sleep) - {node.chosen or ""})
            if todo:
                if node.chosen is not None:
                    node.sleep[node.chosen] = node.next[node.chosen]
                node.chosen = q = todo[0]
                self.order = [str(path[j].chosen) for j in range(d + 1)]
                del path[d + 1 :]
                # continue with q, then tasks that are not asleep after q's call, then the rest
                after = {r for r, c in node.sleep.items() if not conflicts(c, node.next[q])}
                self.prefer = [q, *[r for r in sorted(node.next) if r != q and r not in after]]
                return
        self.order = None

    def guarantee(self, runs: int, scenarios: int, with_faults: str, coverage: Coverage) -> str:
        return f"all non-equivalent orders explored (DPOR){with_faults}: {runs:,} runs"

    def over_budget(self, what: str, budget: int, total: int, where: str) -> ValidationError:
        return ValidationError(
            f"{what} calls ({total:,} orders) need more than budget={budget:,} DPOR runs to cover every "
            f"non-equivalent order{where}; raise budget, use fewer actors, calls or faults, or use "
            "strategy='pct' to sample"
        )

    @staticmethod
    def _extend(path: list[_Node], trace: Trace, begin: int) -> int:
        """Extend the path with the states this run went through beyond the forced prefix; where it stops."""
        calls = trace.calls
        for i in range(begin, len(calls) + 1):
            sleep = {} if i == 0 else {q: c for q, c in path[i - 1].sleep.items() if not conflicts(c, calls[i - 1])}
            nxt = trace.enabled[i] if i < len(calls) else {}
            if i < len(calls) and calls[i].actor not in sleep:
                path.append(_Node(nxt, {calls[i].actor}, sleep, calls[i].actor))
                continue
            awake = [q for q in sorted(nxt) if q not in sleep]
            path.append(_Node(nxt, set(awake[:1]), sleep, None))
            return i  # the run went on with a sleeping task: its analysis stops here (sound, costs a run)
        return len(calls)


def _add_backtracks(path: list[_Node], trace: Sequence[Call], hb: _HappensBefore, k: int) -> None:
    """For every race i < k with call k, make sure the state before i tries an initial of v."""
    call = trace[k]
    for i in range(k - 1, -1, -1):
        other = trace[i]
        if other.actor == call.actor or not conflicts(other, call):
            continue
        if any(task == other.actor and n > other.seq for task, n in call.deps):
            continue  # not a race: k could not go before i (a start, a join, a notify)
        if any(hb(i, j) and hb(j, k) for j in range(i + 1, k)):
            continue  # not a race: ordered through another call
        v = [j for j in range(i + 1, k) if not hb(i, j)] + [k]
        initials: list[str] = []
        for pos, j in enumerate(v):
            actor = trace[j].actor
            if actor in initials or any(trace[m].actor == actor for m in v[:pos]):
                continue
            if not any(hb(m, j) for m in v[:pos]):
                initials.append(actor)
        node = path[i]
        ready = [q for q in initials if q in node.next]
        if not ready:  # none of them could go at that state: try every task that could (conservative)
            node.backtrack |= set(node.next)
            continue
        if not set(ready) & node.backtrack:
            awake = [q for q in ready if q not in node.sleep]
            node.backtrack.add((awake or ready)[0])


def _pct_order(calls: Mapping[str, int], depth: int, rng: random.Random) -> tuple[str, ...]:
    """One PCT schedule: random priorities, ``depth - 1`` random priority-drop points."""
    names = sorted(calls)
    left = dict(calls)
    total = sum(left.values())
    priority = dict(zip(names, rng.sample(range(depth, depth + len(names)), len(names)), strict=True))
    drops = sorted(rng.sample(range(1, total), min(depth - 1, total - 1))) if total > 1 else []
    order: list[str] = []
    for step in range(total):
        runnable = [n for n in names if left[n]]
        actor = max(runnable, key=lambda n: priority[n])
        if drops and drops[0] == step:  # a preemption point: the running actor drops below all
            drops.pop(0)
            priority[actor] = depth - 1 - (depth - 2 - len(drops))
            actor = max(runnable, key=lambda n: priority[n])
        order.append(actor)
        left[actor] -= 1
    return tuple(order)


class PCT:
    """Seeded random schedules with at most ``depth - 1`` preemptions (Burckhardt et al. 2010).

    A bug that needs d - 1 preemptions is found by each run with probability at least
    1 / (n k^(d-1)) for n actors and k calls. Schedules are drawn over the dry run's calls per
    task; a turn a task cannot take yet goes to the next one of the schedule that can. A sample,
    never a proof: it runs until its share of the budget is spent, or until it draws only
    schedules it ran (``drawn_out``).
    """

    name = "pct"
    label = "PCT"
    exact = False
    samples = True

    def __init__(self, calls: Mapping[str, int], depth: int, seed: int) -> None:
        self.calls = dict(calls)
        self.depth = depth
        self.seed = seed
        self.new_scenario()

    def new_scenario(self) -> None:
        self.rng = random.Random(self.seed)
        self.tried: set[tuple[str, ...]] = set()
        self.drawn_out = False

    def new_run(self) -> Sequence[str] | None:
        misses = 0
        while True:
            order = _pct_order(self.calls, self.depth, self.rng)
            if order not in self.tried:
                self.tried.add(order)
                return order
            misses += 1
            if misses > 2000:  # the sampler keeps finding the schedules it already ran
                self.drawn_out = True
                return None

    def next_task(self, waiting: Sequence[str]) -> str:
        return prefer((), waiting)

    def end_run(self, trace: Trace) -> None:
        del trace  # a sample learns nothing from a run

    def coverage(self) -> Coverage:
        return Coverage(complete=False, drawn_out=self.drawn_out)

    def share(self, left: int, scenarios_left: int) -> int:
        return max(left // max(scenarios_left, 1), 1)  # an equal share of what is left

    def guarantee(self, runs: int, scenarios: int, with_faults: str, coverage: Coverage) -> str:
        text = f"{runs:,} sampled orders, seed {self.seed}, depth {self.depth}"
        if with_faults:
            text += with_faults.replace(", with ", ", over ", 1)
        if coverage.drawn_out:
            text += " (no new schedule in 2,000 more draws)"
        return text

    def over_budget(self, what: str, budget: int, total: int, where: str) -> ValidationError:  # pragma: no cover
        raise AssertionError("a sampler never runs over its budget: it stops at it")


@dataclass(frozen=True)
class Share:
    """One scheduler of a portfolio and its share of the budget (the runs it may use)."""

    scheduler: Scheduler
    budget: int


def portfolio(
    strategy: str,
    budget: int,
    exhaustive_limit: int,
    depth: int,
    seed: int,
    calls: Mapping[str, int],
    scenarios: int,
    what: str,
    times: str,
) -> list[Share]:
    """The schedulers to run, in order, each with its share of the budget (``depth`` and ``seed``: PCT's).

    One by name, with the whole budget; ``auto``: exhaustive search (half the budget) while the
    dry run's orders (times the fault ``scenarios``) are at most ``exhaustive_limit``, then DPOR (a
    quarter) if the real schedules outgrew that, then PCT with what is left; with more orders,
    DPOR with half the budget, then PCT with what is left. Exhaustive search asked for by name
    over more orders than the budget is refused before anything runs (``what`` and ``times`` say
    what was asked: ``"2 actors with A: 2 + B: 2 calls"``, ``" x 5 fault scenarios (...)"``).
    """
    total = count_orders(calls)
    runs = total * scenarios
    pct = PCT(calls, depth, seed)
    if strategy == "exhaustive":
        if runs > budget:
            raise ValidationError(
                f"{what} have {total:,} orders{times}{f' = {runs:,} runs' if times else ''}, more than "
                f"budget={budget:,}; use strategy='dpor' (explores one order per class of equivalent orders) "
                f"or 'pct' (samples), or raise budget to {runs:,}"
            )
        return [Share(Exhaustive(), budget)]
    if strategy == "dpor":
        return [Share(DPOR(), budget)]
    if strategy == "pct":
        return [Share(pct, budget)]
    half = max(budget // 2, 1)
    if runs <= min(exhaustive_limit, budget):
        # the real schedules may outgrow the dry run's count (retries): then DPOR, then a sample
        return [Share(Exhaustive(), half), Share(DPOR(), max(budget // 4, 1)), Share(pct, budget)]
    return [Share(DPOR(), half), Share(pct, budget)]


__all__ = [
    "AUTO",
    "DPOR",
    "PCT",
    "STRATEGIES",
    "Exhaustive",
    "Share",
    "portfolio",
]
