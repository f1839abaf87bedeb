"""Calls of an explored run and when two of them conflict (the ground DPOR stands on)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import RaceError
from .interleave import Interleaving

#: Operations that only read; every other operation counts as a write.
READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
#: Operations whose call_key does not name items: they touch the whole table.
WHOLE_TABLE = frozenset({"Query", "Scan", "BatchGetItem", "BatchWriteItem"})
# ---------------------------------------------------------------- calls and conflicts


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
        keys: frozenset[str] | None = None
        if operation not in WHOLE_TABLE and key:
            keys = frozenset(part.strip() for part in key.split(";") if part.strip())
        return cls(actor, operation, key, keys or None, operation not in READS)

    def label(self) -> str:
        return f"{self.operation}({self.key})" if self.key else self.operation


def conflicts(a: Call, b: Call) -> bool:
    """Same actor (program order), or the same item with at least one write."""
    if a.actor == b.actor:
        return True
    if not (a.write or b.write):
        return False
    return a.keys is None or b.keys is None or bool(a.keys & b.keys)


def _trace(res: Interleaving) -> list[Call]:
    """The calls of one run, in turn order; every call must have been gated."""
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


# ---------------------------------------------------------------- result


def _nondeterministic(prefix: Sequence[str], call: Call, before: Call | None) -> RaceError:
    earlier = before.label() if before is not None else "no call (it had finished)"
    return RaceError(
        f"actor {call.actor!r} is not deterministic: at step {len(prefix)} of the order "
        f"{' '.join(prefix)!r} it made {call.label()} where an earlier run with the same order made "
        f"{earlier}. Actors must make the same calls given the same answers (no clocks, random "
        "values or shared state between runs; reset everything in setup)."
    )
