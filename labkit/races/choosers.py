"""Who goes next in a forced run: the :class:`Chooser` contract, and the order ``run_interleaving`` was given.

A run (:class:`~labkit.races.gate.GatedRun`) asks its chooser whenever a task waits or ends, and tells
it when every task stands still (``quiet``); explore's runs ask their scheduler through one
(:class:`~labkit.races.runner.ExactChooser`). A chooser sees the run's tasks by name, so this module
does not import the gate that calls it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from ..shared.errors import RaceError, error_code
from .tasks import BLOCKED, DONE, Task

#: A chooser's answer that ends the forced order: every call from then on runs ungated.
FREE = "\0free"


class Chooser(Protocol):
    """Who goes next: asked whenever a task waits or ends, ``quiet`` once every task stands still.

    A choice that depends on who else waits must wait for ``quiet``; a turn the order forces on
    one task may be granted as soon as that task waits.
    """

    def choose(self, tasks: Mapping[str, Task], waiting: Mapping[str, Task], quiet: bool) -> str | None:
        """A waiting task's name; None to wait (for quiet, or a task not waiting yet); :data:`FREE`."""
        ...

    def expected(self, tasks: Mapping[str, Task]) -> str | None:
        """The task whose turn it is (for messages), or None."""
        ...

    def describe(self, tasks: Mapping[str, Task]) -> str:
        """The order and the turns taken so far (for messages)."""
        ...

    def check_end(self, tasks: Mapping[str, Task]) -> RaceError | None:
        """Once every actor is done: the error for turns never taken (strict), else None."""
        ...


class OrderChooser:
    """The order ``run_interleaving`` was given: turn k is ``order[k]``'s.

    ``strict``: an actor that ended with turns left is a RaceError; else its turns are dropped.
    ``lookahead``: when the turn's task cannot take it yet (not started, blocked), the next turn
    of the order whose task waits is taken instead (explore's sampled orders). Once the order is
    used up, ``then`` decides: :data:`FREE` (every call runs ungated) or a preference list.
    """

    def __init__(
        self, order: Sequence[str], strict: bool, lookahead: bool = False, then: Sequence[str] | None = None
    ) -> None:
        self.order = list(order)
        self.requested = tuple(order)
        self.strict = strict
        self.lookahead = lookahead
        self.then = then
        self.taken: list[str] = []

    def choose(self, tasks: Mapping[str, Task], waiting: Mapping[str, Task], quiet: bool) -> str | None:
        while self.order:
            name = self.order[0]
            if name in waiting:
                self.order.pop(0)
                self.taken.append(name)
                return name
            task = tasks.get(name)
            if task is not None and task.state == DONE:
                if self.strict:
                    raise self._ended(task)
                self.order = [n for n in self.order if n != name]  # it gives up its turns
                continue
            if quiet and self.strict and task is not None and task.state == BLOCKED and task.on is not None:
                raise RaceError(
                    f"turn {len(self.taken) + 1} belongs to {name!r}, but {name} {task.how}, and only their turns "
                    f"can end them; {self.describe(tasks)}. The calls of a thread or pool task an actor starts "
                    f"are that sub-actor's turns ({', '.join(sorted(task.on))}): name it in the order"
                )
            if self.lookahead:
                if not quiet:
                    return None
                for i, later in enumerate(self.order):
                    if later in waiting:
                        del self.order[i]
                        self.taken.append(later)
                        return later
                break
            return None  # not started yet, or blocked: wait for it (the deadline reports it)
        if self.then is None:
            return FREE
        if not quiet:
            return None
        name = prefer(self.then, waiting)
        self.taken.append(name)
        return name

    def _ended(self, task: Task) -> RaceError:
        left = self.order.count(task.name)
        how = "returned" if task.exc is None else f"ended with {error_code(task.exc)}"
        return RaceError(
            f"actor {task.name!r} {how} after {task.calls} turn(s) but the order gives it "
            f"{task.calls + left}; {self.describe(None)}. Give {task.name!r} fewer turns, or pass "
            "strict=False to drop turns an actor no longer takes."
        )

    def expected(self, tasks: Mapping[str, Task] | None) -> str | None:
        return self.order[0] if self.order else None

    def describe(self, tasks: Mapping[str, Task] | None) -> str:
        done = " ".join(self.taken) or "(none)"
        return f"order {' '.join(self.requested)!r}, turns taken so far: {done}"

    def check_end(self, tasks: Mapping[str, Task]) -> RaceError | None:
        if not self.strict:
            return None
        for name in self.order:
            task = tasks.get(name)
            if task is not None:
                return self._ended(task)
            return RaceError(
                f"the order gives {name!r} a turn, but no such thread was started; {self.describe(tasks)}. "
                "Sub-actors are named A.1, A.2, ... in the order actor A starts them"
            )
        return None


def prefer(names: Sequence[str], waiting: Collection[str]) -> str:
    """The first of ``names`` that waits, else the waiting task first in name order (``waiting``: their names)."""
    for name in names:
        if name in waiting:
            return name
    return min(waiting)


__all__ = [
    "FREE",
    "Chooser",
    "OrderChooser",
    "prefer",
]
