"""The strategies :func:`labkit.races.explore` composes: exhaustive search, DPOR, PCT sampling.

Each is a :class:`Strategy`: it runs on a runner (:class:`~labkit.races.calls.OrderRunner`)
within a budget and says what it covered (:class:`Coverage`). A strategy chooses schedules and
calls ``runner.run(order, limit, prefer)``, which makes the real run, judges it and raises to end
the exploration (a violated invariant) or when the budget is spent (``BudgetSpent``).
``explore(strategy="auto")`` is a *portfolio*: an ordered list of strategies, each with its share
of the budget, the next one taking over when one runs out (awslabs/shuttle composes schedulers
the same way). This module never imports the runner, and the runner never imports it;
:mod:`~labkit.races.explore` hands one to the other.

A run's turns are chosen when every task stands still, among the tasks waiting at a call
(:mod:`~labkit.races.gate`), and the run reports them: so exhaustive search and DPOR branch
only on what could really have gone next — an actor's thread that is not started yet, or an
actor waiting for its thread to end, is never given a turn it cannot take.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .calls import Call, OrderRunner, Trace, conflicts, nondeterministic


@dataclass(frozen=True)
class Coverage:
    """What one strategy covered of one fault scenario: every order (or class) it promises, or a sample."""

    #: True: every order (exhaustive) or every class of equivalent orders (DPOR) was run
    complete: bool
    #: a sampler that ran out of new schedules before its budget: there were no more to draw
    drawn_out: bool = False


class Strategy(Protocol):
    """Runs on a runner within a budget; says what it covered."""

    #: ``exhaustive``, ``dpor``, ``pct``: how results and guarantees name it
    name: str

    def run(self, runner: OrderRunner, limit: int) -> Coverage:
        """Explore the runner's current fault scenario until done or ``runner.runs`` reaches ``limit``."""
        ...

    def share(self, left: int, scenarios_left: int) -> int:
        """How many of the ``left`` runs the next scenario may use."""
        ...


class Exhaustive:
    """Every schedule the actors really have: a depth-first search over the tasks waiting at each turn.

    Each run follows a prefix of choices, then takes the first waiting task by name; the next
    run changes the deepest choice that has an untried alternative. An actor that stops early or
    retries gives the schedules it really gives (not the orders of a dry run's call counts).
    """

    name = "exhaustive"

    def run(self, runner: OrderRunner, limit: int) -> Coverage:
        stack: list[tuple[list[str], int]] = []  # per turn: the waiting tasks (sorted), the one chosen
        order: list[str] = []
        while True:
            trace = runner.run(order, limit)
            for i in range(len(order), len(trace)):
                names = sorted(trace.enabled[i])
                stack.append((names, names.index(trace.calls[i].actor)))
            del stack[len(trace) :]
            while stack and stack[-1][1] + 1 >= len(stack[-1][0]):
                stack.pop()
            if not stack:
                return Coverage(complete=True)
            names, chosen = stack[-1]
            stack[-1] = (names, chosen + 1)
            order = [waiting[i] for waiting, i in stack]

    def share(self, left: int, scenarios_left: int) -> int:
        return left


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


class DPOR:
    """Source-DPOR with sleep sets (Abdulla et al. 2014): one real run per explored maximal trace.

    Two orders that differ only in the order of non-conflicting calls end in the same state, so
    one of them is enough. The tasks that can go at a state are the ones that waited there (the
    run reports them); the happens-before order adds, to program order and conflicts, what a start,
    a join or a notify imposes. When none of a race's initials could go at the state it must be
    reversed from, every task that could is tried there (conservative).
    """

    name = "dpor"

    def run(self, runner: OrderRunner, limit: int) -> Coverage:
        path: list[_Node] = []
        order: list[str] = []
        prefer: list[str] = []
        while True:
            trace = runner.run(order, limit, prefer)
            if trace.widened:  # the conflicts it reasoned with were too narrow: start the scenario again
                path, order, prefer = [], [], []
                continue
            calls = trace.calls
            for j, call in enumerate(calls[: len(order)]):  # the replayed prefix made the same calls?
                before = path[j].next.get(call.actor)
                if before != call:
                    raise nondeterministic([c.actor for c in calls[: j + 1]], call, before)
            start = max(len(order) - 1, 0)
            del path[len(order) :]
            blocked = self._extend(path, trace, len(order))
            hb = _HappensBefore(calls[:blocked])
            for k in range(start, blocked):  # races of the calls this run made for the first time
                _add_backtracks(path, calls, hb, k)
            # the deepest state with a task still to explore
            for d in range(len(path) - 1, -1, -1):
                node = path[d]
                todo = sorted((node.backtrack & set(node.next)) - set(node.sleep) - {node.chosen or ""})
                if todo:
                    if node.chosen is not None:
                        node.sleep[node.chosen] = node.next[node.chosen]
                    node.chosen = q = todo[0]
                    order = [str(path[j].chosen) for j in range(d + 1)]
                    del path[d + 1 :]
                    # continue with q, then tasks that are not asleep after q's call, then the rest
                    after = {r for r, c in node.sleep.items() if not conflicts(c, node.next[q])}
                    prefer = [q, *[r for r in sorted(node.next) if r != q and r not in after]]
                    break
            else:
                return Coverage(complete=True)

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

    def share(self, left: int, scenarios_left: int) -> int:
        return left


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
    never a proof.
    """

    name = "pct"

    def __init__(self, calls: Mapping[str, int], depth: int, seed: int) -> None:
        self.calls = dict(calls)
        self.depth = depth
        self.seed = seed

    def run(self, runner: OrderRunner, limit: int) -> Coverage:
        """Sample distinct schedules until the budget; ``drawn_out`` if they ran out before it."""
        rng = random.Random(self.seed)
        tried: set[tuple[str, ...]] = set()
        misses = 0
        while runner.runs < limit:
            order = _pct_order(self.calls, self.depth, rng)
            if order in tried:
                misses += 1
                if misses > 2000:  # the sampler keeps finding the schedules it already ran
                    return Coverage(complete=False, drawn_out=True)
                continue
            misses = 0
            tried.add(order)
            runner.run(order, limit, exact=False)
        return Coverage(complete=False)

    def share(self, left: int, scenarios_left: int) -> int:
        return max(left // max(scenarios_left, 1), 1)  # an equal share of what is left


__all__ = ["DPOR", "PCT", "Coverage", "Exhaustive", "Strategy"]
