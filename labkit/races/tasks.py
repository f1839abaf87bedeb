"""A run's tasks: the actors, and the threads and pool tasks they start; their states and clocks.

Sub-actors are named ``A.1``, ``A.2``, ... in start order (their own are ``A.1.1``...). A task is
running, queued (a pool task no worker is free for), waiting at a call for its turn, granted (its
call in flight), blocked (in a join, a pool shutdown or a ``threading`` wait) or done.

A task's *clock* counts, for every other task, the calls that must have happened before it may
go on — through a start (a sub-actor comes after its parent's calls so far), a join, a pool
shutdown, or a notify (the waiter comes after the notifier's calls). Each call records it
(``deps``): how DPOR knows that a call could not have been made earlier.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..shared.intercept import Binding, CallRecord

RUNNING, QUEUED, WAITING, GRANTED, BLOCKED, DONE = "running", "queued", "waiting", "granted", "blocked", "done"


def sub_actor_of(name: str, actors: Sequence[str]) -> bool:
    """``A.1``, ``A.1.2`` name sub-actors of actor ``A``."""
    root, dot, rest = name.partition(".")
    return bool(dot) and root in actors and all(part.isdigit() and part[0] != "0" for part in rest.split("."))


@dataclass(eq=False)
class Task:
    """One thread of control of a run: an actor, or a thread or pool task it (or its own) started."""

    name: str
    binding: Binding
    parent: Task | None = None
    executor: Any = None
    state: str = RUNNING
    children: int = 0
    calls: int = 0
    #: the call it waits with (WAITING)
    call: CallRecord | None = None
    clock: dict[str, int] = field(default_factory=dict)
    returned: bool = False
    exc: BaseException | None = None
    #: BLOCKED until these tasks end (a join, a shutdown); None: until a notify wakes it
    on: frozenset[str] | None = None
    how: str = ""
    park: Any = None

    @property
    def root(self) -> Task:
        task = self
        while task.parent is not None:
            task = task.parent
        return task

    def describe(self) -> str:
        if self.state == BLOCKED:
            return f"{self.name} {self.how}"
        if self.state == QUEUED:
            return f"{self.name} waits for a free pool worker"
        return f"{self.name} is {self.state}"


def join_clock(clock: dict[str, int], other: Mapping[str, int]) -> None:
    """Raise ``clock`` to at least ``other``'s count for every task (what one task learnt of another)."""
    for name, n in other.items():
        if clock.get(name, 0) < n:
            clock[name] = n


__all__ = [
    "BLOCKED",
    "DONE",
    "GRANTED",
    "QUEUED",
    "RUNNING",
    "WAITING",
    "Task",
    "join_clock",
    "sub_actor_of",
]
