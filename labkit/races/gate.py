"""Recording and gating: what a run does with each call its actors make (hold it for its turn, record it).

The calls reach a session through :mod:`labkit.intercept` (one interception point every
botocore client passes, and a thread -> actor binding); a session decides what happens to them.

:class:`GatedRun` is a scheduler over the run's *tasks* — the actors, and the threads and pool
tasks they start (sub-actors ``A.1``, ``A.2``, ... in start order; their own are ``A.1.1``...).
A task is running, queued (a pool task no worker is free for), waiting at a call for its turn,
granted (its call in flight), blocked (in a join, a pool shutdown or a ``threading`` wait) or done.
Only when every task stands still — none running, no call in flight — does the run choose who
goes next, among the waiting ones: a :class:`Chooser` decides (the order given to
``run_interleaving``, or explore's schedule). So a run depends only on the choices made, never on
which thread the operating system ran first: an actor's two pool threads no longer race for
its turn. Each choice is recorded with every task that was waiting and the call it waited with
(:attr:`GatedRun.steps`): what explore's strategies know of the states they pass.

A task's *clock* counts, for every other task, the calls that must have happened before it may
go on — through a start (a sub-actor comes after its parent's calls so far), a join, a pool
shutdown, or a notify (the waiter comes after the notifier's calls). Each call records it
(``deps``): how DPOR knows that a call could not have been made earlier.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import ClientError

from ..errors import OUTCOME_ERRORS, LabkitError, RaceError, error_code
from ..intercept import Binding
from .keys import call_key

#: The clients the lab hands one-argument actors make exactly one HTTP request per call:
#: botocore's own retries are off. (A team's own client keeps its retries: a turn is one API
#: call, retries included, and the history's ``retries`` column counts them.)
NO_RETRIES: dict[str, Any] = {"retries": {"total_max_attempts": 1, "mode": "standard"}}
#: After an abort, how long to wait for actors to leave (waiting ones leave at once).
ABORT_GRACE = 0.25

RUNNING, QUEUED, WAITING, GRANTED, BLOCKED, DONE = "running", "queued", "waiting", "granted", "blocked", "done"
#: A chooser's answer that ends the forced order: every call from then on runs ungated.
FREE = "\0free"
#: One choice of a run: who went, its call, and every task that was waiting then -> the call it
#: waited with (None for a turn the order forced, granted as soon as its task waited, before the
#: others stood still).
Step = tuple[str, dict[str, Any], Mapping[str, dict[str, Any]] | None]


class Aborted(BaseException):
    """Raised out of a gated call once the run is aborted; ``except Exception`` cannot swallow it."""


def _locked() -> Any:
    lock = threading.Lock()
    lock.acquire()
    return lock


def is_outcome(exc: BaseException) -> bool:
    """A DynamoDB error (or a labkit outcome error, or an injected fault) an actor may end with."""
    return isinstance(exc, (ClientError, *OUTCOME_ERRORS)) or hasattr(exc, "labkit_fault")


def sub_actor_of(name: str, actors: Sequence[str]) -> bool:
    """``A.1``, ``A.1.2`` name sub-actors of actor ``A``."""
    root, dot, rest = name.partition(".")
    return bool(dot) and root in actors and all(part.isdigit() and part[0] != "0" for part in rest.split("."))


# ---------------------------------------------------------------- recording and gating


class Session:
    """What one run (an interleaving, or a stress run) does with the calls its probes see.

    ``before(actor, call)`` runs as the call is about to be sent (it may block: a turn) and
    ``after(actor, call)`` once its answer (or error) is in; ``call`` is the call's record
    (operation, params, key; the session adds actor, seq, turn, start, end, outcome, retries).
    ``refuse(error)`` is told about a call that cannot be gated (it raises); ``closed`` is set once
    the run is over (a later call from a thread an actor started is refused).
    """

    closed = False

    def refuse(self, error: LabkitError) -> None:
        """A call the race lab cannot gate: end the run with ``error`` (raises)."""
        raise error

    def before(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError

    def after(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError


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
    call: dict[str, Any] | None = None
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


def _join(clock: dict[str, int], other: Mapping[str, int]) -> None:
    for name, n in other.items():
        if clock.get(name, 0) < n:
            clock[name] = n


class Chooser(Protocol):
    """Who goes next: asked whenever a task waits or ends, ``quiet`` once every task stands still.

    A choice that depends on who else waits must wait for ``quiet``; a turn the order forces on
    one task may be granted as soon as that task waits.
    """

    def choose(self, run: GatedRun, waiting: Mapping[str, Task], quiet: bool) -> str | None:
        """A waiting task's name; None to wait (for quiet, or a task not waiting yet); :data:`FREE`."""
        ...

    def expected(self, run: GatedRun) -> str | None:
        """The task whose turn it is (for messages), or None."""
        ...

    def describe(self, run: GatedRun) -> str:
        """The order and the turns taken so far (for messages)."""
        ...

    def check_end(self, run: GatedRun) -> RaceError | None:
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

    def choose(self, run: GatedRun, waiting: Mapping[str, Task], quiet: bool) -> str | None:
        while self.order:
            name = self.order[0]
            if name in waiting:
                self.order.pop(0)
                self.taken.append(name)
                return name
            task = run.tasks.get(name)
            if task is not None and task.state == DONE:
                if self.strict:
                    raise self._ended(task)
                self.order = [n for n in self.order if n != name]  # it gives up its turns
                continue
            if quiet and self.strict and task is not None and task.state == BLOCKED and task.on is not None:
                raise RaceError(
                    f"turn {len(self.taken) + 1} belongs to {name!r}, but {name} {task.how}, and only their turns "
                    f"can end them; {self.describe(run)}. The calls of a thread or pool task an actor starts "
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

    def expected(self, run: GatedRun | None) -> str | None:
        return self.order[0] if self.order else None

    def describe(self, run: GatedRun | None) -> str:
        done = " ".join(self.taken) or "(none)"
        return f"order {' '.join(self.requested)!r}, turns taken so far: {done}"

    def check_end(self, run: GatedRun) -> RaceError | None:
        if not self.strict:
            return None
        for name in self.order:
            task = run.tasks.get(name)
            if task is not None:
                return self._ended(task)
            return RaceError(
                f"the order gives {name!r} a turn, but no such thread was started; {self.describe(run)}. "
                "Sub-actors are named A.1, A.2, ... in the order actor A starts them"
            )
        return None


def prefer(names: Sequence[str], waiting: Mapping[str, Task]) -> str:
    """The first of ``names`` that waits, else the waiting task first in name order."""
    for name in names:
        if name in waiting:
            return name
    return min(waiting)


class GatedRun(Session):
    """One forced run: its tasks, whose turn it is, what happened.

    Each call waits in :meth:`before` until the chooser picks it; :meth:`after` records it. The
    first problem (a stall, an actor that raised, a turn that cannot be taken) becomes
    ``failure`` and every waiting call raises :class:`Aborted`. ``max_calls`` (explore's) caps
    the calls one task makes.
    """

    def __init__(self, chooser: Chooser, deadline: float, max_calls: int | None = None) -> None:
        self.chooser = chooser
        self.deadline = deadline
        self.max_calls = max_calls
        self.lock = threading.Lock()  # a plain lock: the race lab's own waits are never a task's
        self.tasks: dict[str, Task] = {}
        self.busy = 0  # tasks running or with a call in flight
        self.in_flight: Task | None = None
        self.free = False
        self.failure: LabkitError | None = None
        self.steps: list[Step] = []
        self.rows: list[dict[str, Any]] = []
        self.errors: dict[str, BaseException] = {}
        self.roots = 0
        self.over = _locked()  # released once every actor is done, or the run failed
        self._over = False
        self.t0 = time.perf_counter()
        self.taken: Counter[str] = Counter()

    # ------------------------------------------------------------ tasks

    def add_actor(self, binding: Binding) -> None:
        """An actor of the run (before its thread starts)."""
        self.tasks[binding.actor] = Task(binding.actor, binding)
        self.busy += 1
        self.roots += 1

    def spawn(self, parent: Binding, executor: Any | None) -> Binding:
        with self.lock:
            if self.closed:
                raise RaceError(
                    f"{parent.who} started a thread after its run had ended; an actor must wait for "
                    "the threads it starts before it returns"
                )
            if self.failure is not None:
                raise Aborted
            mother = self.tasks[parent.actor]
            root = mother.root
            mother.children += 1
            name = f"{mother.name}.{mother.children}"
            kind = "pool task" if executor is not None else "thread"
            if root.state == DONE:
                self._fail(
                    RaceError(
                        f"{kind} {name!r} was started after actor {root.name!r} had returned; an actor "
                        "must start and wait for its threads before it returns"
                    )
                )
                raise Aborted
            state = RUNNING
            if executor is not None:
                busy = sum(1 for t in self.tasks.values() if t.executor is executor and t.state not in (DONE, QUEUED))
                if busy >= getattr(executor, "_max_workers", busy + 1):
                    state = QUEUED  # every worker of the pool runs one of this run's tasks
            who = f"{kind} {name!r} of actor {root.name!r}"
            binding = Binding(name, self, parent.plan, parent.endpoint, who)
            clock = dict(mother.clock)
            _join(clock, {mother.name: mother.calls})
            self.tasks[name] = Task(name, binding, mother, executor, state, clock=clock)
            if state == RUNNING:
                self.busy += 1
            return binding

    def started(self, task: Binding) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is not None and t.state == QUEUED:
                t.state = RUNNING
                self.busy += 1

    def returned(self, task: Binding) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is not None:
                t.returned = True

    def ended(self, task: Binding, exc: BaseException | None) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is None or t.state == DONE:
                return
            self._done(t, exc)
            if exc is not None and not isinstance(exc, Aborted) and self.failure is None:
                if is_outcome(exc):
                    self.errors[t.name] = exc
                else:
                    error = RaceError(
                        f"{t.binding.who} raised {type(exc).__name__}: {exc} (after {t.calls} call(s); "
                        f"{self.chooser.describe(self)}). Fix it; only DynamoDB errors count as an outcome of a race."
                    )
                    error.__cause__ = exc
                    self._fail(error)
            if t.executor is not None:  # the worker it freed takes the pool's next task
                for other in self.tasks.values():
                    if other.executor is t.executor and other.state == QUEUED:
                        other.state = RUNNING
                        self.busy += 1
                        break
            self._decide()

    def _done(self, t: Task, exc: BaseException | None) -> None:
        if t.state in (RUNNING, GRANTED):
            self.busy -= 1
        t.state = DONE
        t.exc = exc
        t.returned = True
        for other in self.tasks.values():  # those blocked until it ended go on
            if (
                other.state == BLOCKED
                and other.on is not None
                and t.name in other.on
                and all(self.tasks[n].state == DONE for n in other.on)
            ):
                for n in other.on:
                    _join(other.clock, self.tasks[n].clock)
                    _join(other.clock, {n: self.tasks[n].calls})
                other.state = RUNNING
                other.on = None
                self.busy += 1

    def pool_tasks(self, executor: Any) -> tuple[str, ...]:
        with self.lock:
            return tuple(t.name for t in self.tasks.values() if t.executor is executor)

    def observed(self, task: Binding, other: Binding) -> None:
        with self.lock:
            t, o = self.tasks.get(task.actor), self.tasks.get(other.actor)
            if t is not None and o is not None:
                _join(t.clock, o.clock)
                _join(t.clock, {o.name: o.calls})

    def stamp(self, task: Binding) -> dict[str, int]:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is None:
                return {}
            found = dict(t.clock)
            _join(found, {t.name: t.calls})
            return found

    def absorb(self, task: Binding, stamp: Any) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is not None and isinstance(stamp, dict):
                _join(t.clock, stamp)

    def blocked(self, task: Binding, on: tuple[str, ...] | None, how: str) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is None or t.state != RUNNING:
                return  # a wait inside a call in flight (botocore's own) changes nothing
            if on is not None:
                pending = frozenset(n for n in on if n in self.tasks and self.tasks[n].state != DONE)
                for n in set(on) - pending:
                    if n in self.tasks:
                        _join(t.clock, self.tasks[n].clock)
                        _join(t.clock, {n: self.tasks[n].calls})
                if not pending:
                    return
                t.on = pending
            else:
                t.on = None
            t.state = BLOCKED
            t.how = how
            self.busy -= 1
            self._decide()

    def woken(self, tasks: list[Binding], source: Binding | None) -> None:
        with self.lock:
            src = self.tasks.get(source.actor) if source is not None else None
            for binding in tasks:
                t = self.tasks.get(binding.actor)
                if t is None or t.state != BLOCKED or t.on is not None:
                    continue
                if src is not None:
                    _join(t.clock, src.clock)
                    _join(t.clock, {src.name: src.calls})
                t.state = RUNNING
                self.busy += 1

    def resumed(self, task: Binding) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is not None and t.state == BLOCKED:
                t.state = RUNNING
                t.on = None
                self.busy += 1

    # ------------------------------------------------------------ calls

    def refuse(self, error: LabkitError) -> None:
        """The run fails with ``error`` (unless it already failed); the calling actor leaves at once."""
        with self.lock:
            self._fail(error)
        raise Aborted

    def before(self, actor: str, call: dict[str, Any]) -> None:
        call["key"] = call_key(call["operation"], call.get("params") or {})
        with self.lock:
            if self.failure is not None:
                raise Aborted
            task = self.tasks[actor]
            call["actor"] = actor
            call["seq"] = task.calls
            task.calls += 1
            if self.free:
                call["turn"] = None
                call["start"] = time.perf_counter() - self.t0
                return
            if self.max_calls is not None and task.calls > self.max_calls:
                self._fail(
                    RaceError(
                        f"actor {actor!r} made more calls than explore gave it turns ({self.max_calls}; "
                        f"{self.chooser.describe(self)}); a retry loop that never ends? Raise max_calls if "
                        "the actor really makes that many."
                    )
                )
                raise Aborted
            call["deps"] = dict(task.clock)
            task.call = call
            task.park = park = _locked()
            if task.state in (RUNNING, GRANTED):
                self.busy -= 1
            task.state = WAITING
            self._decide()
        remaining = self.deadline - time.monotonic()
        got = park.acquire(True, remaining) if remaining > 0 else park.acquire(False)
        with self.lock:
            if task.state == WAITING:  # not chosen: the run failed, or time is up
                if not got and self.failure is None:
                    self._fail(self.stalled())
                raise Aborted

    def after(self, actor: str, call: dict[str, Any]) -> None:
        with self.lock:
            call["end"] = time.perf_counter() - self.t0
            self.rows.append(dict(call))
            task = self.tasks.get(actor)
            if call.get("turn") is not None and task is not None and task is self.in_flight:
                self.in_flight = None
                task.state = RUNNING  # still busy: it goes on to its next call, or ends
                self.taken[actor] += 1

    def finished(self, actor: str, exc: BaseException | None) -> None:
        """An actor's function returned (exc None) or raised."""
        with self.lock:
            t = self.tasks[actor]
            self._done(t, exc)
            self.roots -= 1
            if self.failure is None and not isinstance(exc, Aborted):
                if exc is not None and not is_outcome(exc):
                    error = RaceError(
                        f"actor {actor!r} raised {type(exc).__name__}: {exc} "
                        f"(after {self.taken[actor]} turn(s); {self.chooser.describe(self)}). "
                        "Fix the actor; only DynamoDB errors count as an outcome of a race."
                    )
                    error.__cause__ = exc
                    self._fail(error)
                else:
                    alive = [d for d in self.tasks.values() if d is not t and d.root is t and not d.returned]
                    if alive:
                        names = ", ".join(f"{d.binding.who.split(' of ')[0]}" for d in alive)
                        self._fail(
                            RaceError(
                                f"actor {actor!r} returned while {names} it started was still running; an "
                                "actor must wait for the threads it starts (join them, or leave the `with "
                                "ThreadPoolExecutor()` block, or wait for their futures) before it returns"
                            )
                        )
            if self.roots == 0:
                self._end()
            else:
                self._decide()

    # ------------------------------------------------------------ choosing

    def _decide(self) -> None:
        """With the lock held: the chooser picks who goes next (``quiet``: every task stands still)."""
        if self.in_flight is not None or self.failure is not None or self.free:
            return
        waiting = {name: t for name, t in self.tasks.items() if t.state == WAITING}
        quiet = self.busy == 0
        if not waiting:
            return  # every task blocked or done: a wake-up (or the deadline) comes next
        try:
            choice = self.chooser.choose(self, waiting, quiet)
        except RaceError as error:
            self._fail(error)
            return
        if choice is None:
            return
        if choice == FREE:
            self.free = True
            for t in waiting.values():
                assert t.call is not None
                t.call["turn"] = None
                t.call["start"] = time.perf_counter() - self.t0
                t.state = RUNNING
                self.busy += 1
                t.park.release()
            return
        task = waiting[choice]
        call = task.call
        assert call is not None
        call["turn"] = len(self.steps)
        snapshot = {name: t.call for name, t in waiting.items() if t.call is not None} if quiet else None
        self.steps.append((choice, call, snapshot))
        task.call = None
        task.state = GRANTED
        self.busy += 1
        self.in_flight = task
        call["start"] = time.perf_counter() - self.t0
        task.park.release()

    def _fail(self, error: LabkitError) -> None:
        """With the lock held: the run fails; waiting calls leave, the run's owner is told."""
        if self.failure is None:
            self.failure = error
        for t in self.tasks.values():
            if t.state == WAITING and t.park is not None:
                t.park.release()
        self._end()

    def _end(self) -> None:
        if not self._over:
            self._over = True
            self.over.release()

    def wait_over(self) -> None:
        """Block the run's owner until every actor is done or the run failed; a stall at the deadline."""
        remaining = self.deadline - time.monotonic()
        if remaining > 0 and self.over.acquire(True, remaining):
            return
        with self.lock:
            if self.failure is None:
                alive = [t.name for t in self.tasks.values() if t.parent is None and t.state != DONE]
                self._fail(RaceError(f"{self.stalled()} Still running: {', '.join(alive)}."))

    def stalled(self) -> RaceError:
        """The error for a run that ran out of time: which turn was never taken, or never answered."""
        turn = len(self.steps)
        nxt = self.in_flight.name if self.in_flight is not None else self.chooser.expected(self)
        where = self.chooser.describe(self)
        if self.in_flight is not None:  # a slow answer (a loaded machine, a slow endpoint), not a stuck actor
            return RaceError(
                f"timed out: turn {turn} (actor {nxt!r}) was taken but its call had not "
                f"answered; {where}. The endpoint is slow or overloaded: raise `timeout`."
            )
        others = [t.describe() for t in self.tasks.values() if t.state in (BLOCKED, QUEUED, RUNNING)]
        still = f" ({'; '.join(others)})" if others else ""
        who = repr(nxt) if nxt is not None else "?"
        return RaceError(
            f"timed out: turn {turn + 1} (actor {who}) was never taken{still}; {where}. Check that "
            f"actor {who} makes its DynamoDB calls with a botocore-based client (a boto3 client or "
            "resource, a PynamoDB model) on its own thread or threads it starts, and does not wait on "
            "another actor or on a lock another thread holds across a DynamoDB call; or raise `timeout`."
        )


class WorkerTally(Session):
    """Counts one worker's calls, failed calls and botocore retries (no gating)."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.retries = 0

    def before(self, actor: str, call: dict[str, Any]) -> None:
        call["start"] = time.perf_counter()

    def after(self, actor: str, call: dict[str, Any]) -> None:
        self.calls += 1
        self.retries += int(call.get("retries") or 0)
        if call.get("outcome") != "ok":
            self.failed += 1


__all__ = [
    "ABORT_GRACE",
    "BLOCKED",
    "DONE",
    "FREE",
    "GRANTED",
    "NO_RETRIES",
    "QUEUED",
    "RUNNING",
    "WAITING",
    "Aborted",
    "Chooser",
    "GatedRun",
    "OrderChooser",
    "Session",
    "Step",
    "Task",
    "WorkerTally",
    "is_outcome",
    "prefer",
    "sub_actor_of",
]
