"""The strategies :func:`labkit.races.explore` picks from: exhaustive, DPOR and PCT sampling.

Each strategy is a function of a runner (:class:`~labkit.races.calls.OrderRunner`): it chooses
orders and calls ``runner.run(order, limit)``, which makes the real run, judges it and raises to
end the exploration. This module never imports the runner, and the runner never imports it;
:mod:`~labkit.races.explore` hands one to the other.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .calls import Call, OrderRunner, conflicts, nondeterministic
from .orders import each_order


def exhaustive(runner: OrderRunner, calls: Mapping[str, int], limit: int) -> None:
    """Run every order of ``calls`` (in sorted order) until one fails or ``limit`` runs are made."""
    for order in each_order(calls):
        runner.run(order, limit)


class _HappensBefore:
    """Vector clocks over one trace: i -> j iff a chain of conflicting calls leads from i to j."""

    def __init__(self, trace: Sequence[Call]) -> None:
        self.trace = trace
        self.clocks: list[dict[str, int]] = []
        last: dict[str, int] = {}
        for k, call in enumerate(trace):
            clock: dict[str, int] = {}
            for j in range(k):
                if j == last.get(call.actor) or (trace[j].actor != call.actor and conflicts(trace[j], call)):
                    for actor, pos in self.clocks[j].items():
                        if clock.get(actor, -1) < pos:
                            clock[actor] = pos
            clock[call.actor] = k
            self.clocks.append(clock)
            last[call.actor] = k

    def __call__(self, i: int, j: int) -> bool:
        return i < j and self.clocks[j].get(self.trace[i].actor, -1) >= i


@dataclass
class _Node:
    """A state on the DPOR path: each enabled actor's next call, backtrack and sleep sets."""

    next: dict[str, Call]
    backtrack: set[str]
    sleep: dict[str, Call]
    chosen: str | None


def _enabled_next(trace: Sequence[Call], i: int) -> dict[str, Call]:
    nxt: dict[str, Call] = {}
    for call in trace[i:]:
        nxt.setdefault(call.actor, call)
    return nxt


def dpor(runner: OrderRunner, limit: int) -> None:
    """Source-DPOR with sleep sets (Abdulla et al. 2014): one real run per explored maximal trace."""
    path: list[_Node] = []
    order: list[str] = []
    prefer: list[str] = []
    while True:
        trace = runner.run(order, limit, prefer, exact=True)
        for j, call in enumerate(trace[: len(order)]):  # the replayed prefix made the same calls?
            before = path[j].next.get(call.actor)
            if before != call:
                raise nondeterministic([c.actor for c in trace[: j + 1]], call, before)
        start = max(len(order) - 1, 0)
        del path[len(order) :]
        # extend the path with the states this run went through beyond the forced prefix
        blocked = len(trace)
        for i in range(len(order), len(trace) + 1):
            sleep = {} if i == 0 else {q: c for q, c in path[i - 1].sleep.items() if not conflicts(c, trace[i - 1])}
            nxt = _enabled_next(trace, i)
            if i < len(trace) and trace[i].actor not in sleep:
                path.append(_Node(nxt, {trace[i].actor}, sleep, trace[i].actor))
                continue
            awake = [q for q in sorted(nxt) if q not in sleep]
            path.append(_Node(nxt, set(awake[:1]), sleep, None))
            blocked = i
            break
        # races of the calls this run made for the first time
        hb = _HappensBefore(trace[:blocked])
        for k in range(start, blocked):
            _add_backtracks(path, trace, hb, k)
        # the deepest state with an actor still to explore
        for d in range(len(path) - 1, -1, -1):
            node = path[d]
            todo = sorted(node.backtrack - set(node.sleep) - {node.chosen or ""})
            if todo:
                if node.chosen is not None:
                    node.sleep[node.chosen] = node.next[node.chosen]
                node.chosen = q = todo[0]
                order = [str(path[j].chosen) for j in range(d + 1)]
                del path[d + 1 :]
                # continue with q, then actors that are not asleep after q's call, then the rest
                after = {r for r, c in node.sleep.items() if not conflicts(c, node.next[q])}
                prefer = [q, *[r for r in sorted(node.next) if r != q and r not in after]]
                break
        else:
            return


def _add_backtracks(path: list[_Node], trace: Sequence[Call], hb: _HappensBefore, k: int) -> None:
    """For every race i < k with call k, make sure the state before i tries an initial of v."""
    call = trace[k]
    for i in range(k - 1, -1, -1):
        other = trace[i]
        if other.actor == call.actor or not conflicts(other, call):
            continue
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
        if not set(initials) & node.backtrack:
            awake = [q for q in initials if q not in node.sleep]
            node.backtrack.add((awake or initials)[0])


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


def pct(runner: OrderRunner, calls: Mapping[str, int], depth: int, seed: int, limit: int) -> bool:
    """Sample distinct PCT schedules until the budget; False if they ran out before it."""
    rng = random.Random(seed)
    tried: set[tuple[str, ...]] = set()
    misses = 0
    while runner.runs < limit:
        order = _pct_order(calls, depth, rng)
        if order in tried:
            misses += 1
            if misses > 2000:  # the sampler keeps finding the schedules it already ran
                return False
            continue
        misses = 0
        tried.add(order)
        runner.run(order, limit)
    return True


__all__ = ["dpor", "exhaustive", "pct"]
