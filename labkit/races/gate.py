"""Gating: the forced run, which holds each call its actors make for its turn, and records it.

The calls reach a session (:mod:`labkit.races.sessions`) through :mod:`labkit.shared.intercept` (one
interception point every botocore client passes, and a thread -> actor binding).

:class:`GatedRun` is a scheduler over the run's *tasks* (:mod:`labkit.races.tasks`) — the actors, and
the threads and pool tasks they start. Only when every task stands still — none running, no call in
flight — does the run choose who goes next, among the waiting ones: a
:class:`~labkit.races.choosers.Chooser` decides (the order given to ``run_interleaving``, or
explore's schedule). So a run depends only on the choices made, never on
which thread the operating system ran first: an actor's two pool threads no longer race for
its turn. Each choice is recorded with every task that was waiting and the call it waited with
(:attr:`GatedRun.steps`): what explore's strategies know of the states they pass.

Each call records its task's *clock* (``deps``; :mod:`labkit.races.tasks`): how DPOR knows that a
call could not have been made earlier.
"""

from __future__ import annotations

import _thread
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from ..shared.errors import OUTCOME_ERRORS, LabkitError, RaceError
from ..shared.intercept import Binding, CallRecord
from .choosers import FREE, Chooser
from .keys import call_key
from .replication import END, REPLICATE, Replication, delivery_name
from .sessions import Recorder
from .tasks import (
    BLOCKED,
    DONE,
    GRANTED,
    QUEUED,
    RUNNING,
    WAITING,
    Task,
    join_clock,
)

#: The clients the lab hands one-argument actors make exactly one HTTP request per call:
#: botocore's own retries are off. (A team's own client keeps its retries: a turn is one API
#: call, retries included, and the history's ``retries`` column counts them.)
NO_RETRIES: dict[str, Any] = {"retries": {"total_max_attempts": 1, "mode": "standard"}}
#: After an abort, how long to wait for actors to leave (waiting ones leave at once).
ABORT_GRACE = 0.25

#: One choice of a run: who went, its call, and every task that was waiting then -> the call it
#: waited with (None for a turn the order forced, granted as soon as its task waited, before the
#: others stood still).
Step = tuple[str, CallRecord, Mapping[str, CallRecord] | None]


class Aborted(BaseException):
    """Raised out of a gated call once the run is aborted; ``except Exception`` cannot swallow it."""


def _locked() -> Any:
    lock = threading.Lock()
    lock.acquire()
    return lock


def is_outcome(exc: BaseException) -> bool:
    """A DynamoDB error (or a labkit outcome error, or an injected fault) an actor may end with."""
    return isinstance(exc, (ClientError, *OUTCOME_ERRORS)) or hasattr(exc, "labkit_fault")


class GatedRun(Recorder):
    """One forced run: its tasks, whose turn it is, what happened.

    Each call waits in :meth:`before` until the chooser picks it; :meth:`after` records it. The
    first problem (a stall, an actor that raised, a turn that cannot be taken) becomes
    ``failure`` and every waiting call raises :class:`Aborted`. ``max_calls`` (explore's) caps
    the calls one task makes.
    """

    def __init__(
        self,
        chooser: Chooser,
        deadline: float,
        max_calls: int | None = None,
        replication: Replication | None = None,
    ) -> None:
        self.chooser = chooser
        #: replication held by the lab: each delivery a call's answer names is a task of the run
        self.replication = replication if replication is not None and replication.active else None
        self.deliveries: dict[str, int] = {}  # a delivery task's name -> the engine's delivery id
        self.deadline = deadline
        #: A stall is this long with no progress (no turn taken, no call answered): each step moves the
        #: deadline on, so a loaded machine's slow run is not taken for a hang (docs/decisions.md 225).
        self.patience = max(deadline - time.monotonic(), 0.0)
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
            join_clock(clock, {mother.name: mother.calls})
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
                        f"{self.chooser.describe(self.tasks)}). Fix it; only DynamoDB errors count as an outcome "
                        "of a race."
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
                    join_clock(other.clock, self.tasks[n].clock)
                    join_clock(other.clock, {n: self.tasks[n].calls})
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
                join_clock(t.clock, o.clock)
                join_clock(t.clock, {o.name: o.calls})

    def stamp(self, task: Binding) -> dict[str, int]:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is None:
                return {}
            found = dict(t.clock)
            join_clock(found, {t.name: t.calls})
            return found

    def absorb(self, task: Binding, stamp: Any) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is not None and isinstance(stamp, dict):
                join_clock(t.clock, stamp)

    def blocked(self, task: Binding, on: tuple[str, ...] | None, how: str) -> None:
        with self.lock:
            t = self.tasks.get(task.actor)
            if t is None or t.state != RUNNING:
                return  # a wait inside a call in flight (botocore's own) changes nothing
            if on is not None:
                pending = frozenset(n for n in on if n in self.tasks and self.tasks[n].state != DONE)
                for n in set(on) - pending:
                    if n in self.tasks:
                        join_clock(t.clock, self.tasks[n].clock)
                        join_clock(t.clock, {n: self.tasks[n].calls})
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
                    join_clock(t.clock, src.clock)
                    join_clock(t.clock, {src.name: src.calls})
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

    def before(self, actor: str, call: CallRecord) -> None:
        call.key = call_key(call.operation, call.params)
        with self.lock:
            if self.failure is not None:
                raise Aborted
            task = self.tasks[actor]
            call.actor = actor
            call.seq = task.calls
            task.calls += 1
            if self.free:
                call.turn = None
                call.start = time.perf_counter() - self.t0
                return
            if self.max_calls is not None and task.calls > self.max_calls:
                self._fail(
                    RaceError(
                        f"actor {actor!r} made more calls than explore gave it turns ({self.max_calls}; "
                        f"{self.chooser.describe(self.tasks)}); a retry loop that never ends? Raise max_calls if "
                        "the actor really makes that many."
                    )
                )
                raise Aborted
            call.deps = dict(task.clock)
            self._wait(task, call)

    def _wait(self, task: Task, call: CallRecord) -> None:
        """With the lock held, then released: ``call`` waits until the chooser gives ``task`` its turn."""
        task.call = call
        task.park = park = _locked()
        if task.state in (RUNNING, GRANTED):
            self.busy -= 1
        task.state = WAITING
        self._decide()
        self.lock.release()
        try:
            got = self._until_deadline(park)
        finally:
            self.lock.acquire()
        if task.state == WAITING:  # not chosen: the run failed, or time is up
            if not got and self.failure is None:
                self._fail(self.stalled())
            raise Aborted

    def after(self, actor: str, call: CallRecord) -> None:
        made = self._made(call)
        with self.lock:
            self._record(actor, call)
            if made and not self.free and self.failure is None:
                self._add_deliveries(actor, call, made)

    # ------------------------------------------------------------ replication deliveries

    def _made(self, call: CallRecord) -> list[dict[str, Any]]:
        """The pending deliveries the call's answer named (asked before the lock: one ListReplications)."""
        if self.replication is None or not call.made or self.free or call.turn is None:
            return []
        try:
            return self.replication.pending(call.made)
        except LabkitError as error:
            with self.lock:
                self._fail(RaceError(f"listing the deliveries of {call.actor}'s call failed: {error}"))
            raise Aborted from None

    def _add_deliveries(self, actor: str, call: CallRecord, made: list[dict[str, Any]]) -> None:
        """With the lock held: each delivery a task, waiting from now, after the call that made it."""
        writer = self.tasks[actor]
        clock = dict(writer.clock)
        join_clock(clock, {actor: writer.calls})
        seen: Counter[str] = Counter()
        for found in made:
            target = str(found["To"])
            seen[target] += 1
            name = delivery_name(actor, call.seq, target, seen[target])
            params = {"TableName": found["TableName"], "Key": found["Key"], "From": found["From"], "To": target}
            record = CallRecord(REPLICATE, params, target, actor=name, seq=0, deps=dict(clock))
            record.key = call_key(REPLICATE, params)
            binding = Binding(name, self, None, None, f"delivery {name}")
            task = Task(name, binding, state=WAITING, call=record, clock=dict(clock), calls=1)
            task.park = _locked()
            self.tasks[name] = task
            self.deliveries[name] = int(found["Id"])

    def _deliver(self, task: Task, call: CallRecord) -> None:
        """A granted delivery, on a thread of its own: made, recorded, done; then the next turn."""
        assert self.replication is not None
        try:
            outcome = self.replication.deliver(self.deliveries[task.name])
        except LabkitError as error:
            with self.lock:
                self._fail(RaceError(f"delivery {task.name} failed: {error}"))
            return
        with self.lock:
            call.outcome = "ok"
            call.params = {**call.params, "Outcome": outcome}
            self._record(task.name, call)
            self._done(task, None)
            if self.roots == 0:
                self._actors_done()
            else:
                self._decide()

    def _actors_done(self) -> None:
        """With the lock held, every actor done: the run ends once no delivery waits (or is in flight).

        The deliveries still waiting are steps like the others, so every run's trace is complete (a
        strategy sees each delivery's place). With ``converge=False`` a last task, ``[end]``, waits
        beside them: the run ends at its turn, the deliveries not made by then left pending.
        """
        if self.in_flight is not None and self.in_flight.name in self.deliveries:
            return  # it ends the run, or goes on, when it is made
        # [end] too, once made: it is the last step of its run whenever it comes (a complete trace)
        waiting = [t for n, t in self.tasks.items() if (n in self.deliveries or n == END) and t.state == WAITING]
        if not waiting or self.free or self.failure is not None or self.replication is None:
            self._end()
            return
        if not self.replication.converge and END not in self.tasks:
            clock: dict[str, int] = {}
            for t in self.tasks.values():
                join_clock(clock, {t.name: t.calls} if t.state == DONE else {})
            record = CallRecord(END, {}, None, actor=END, seq=0, deps=dict(clock))
            task = Task(END, Binding(END, self, None, None, "the run's end"), state=WAITING, call=record, clock=clock)
            task.park = _locked()
            self.tasks[END] = task
        self._decide()
        if self.free:
            self._end()  # the order was used up: the deliveries left are made when the run ends

    def _record(self, actor: str, call: CallRecord) -> None:
        call.end = time.perf_counter() - self.t0
        self.rows.append(call.row())
        task = self.tasks.get(actor)
        self._progressed()
        if call.turn is not None and task is not None and task is self.in_flight:
            self.in_flight = None
            task.state = RUNNING  # still busy: it goes on to its next call, or ends
            self.taken[actor] += 1

    def hold(self, actor: str, call: CallRecord, outcome: str) -> None:
        """The call's first half is done: recorded with ``outcome`` as its own turn. Its second half is
        the task's next call (the same record, sent again): it waits for the actor's next turn."""
        with self.lock:
            self._record(actor, replace(call, outcome=outcome, retries=0, deps=dict(call.deps)))
            if self.failure is not None:
                raise Aborted
            task = self.tasks[actor]
            call.turn = call.start = call.end = None
            call.seq = task.calls
            task.calls += 1
            if self.free:
                call.start = time.perf_counter() - self.t0
                return
            call.deps = dict(task.clock)
            self._wait(task, call)

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
                        f"(after {self.taken[actor]} turn(s); {self.chooser.describe(self.tasks)}). "
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
                self._actors_done()
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
            choice = self.chooser.choose(self.tasks, waiting, quiet)
        except RaceError as error:
            self._fail(error)
            return
        if choice is None:
            return
        if choice == FREE:
            self.free = True
            for t in waiting.values():
                if t.name in self.deliveries:
                    continue  # never a turn: made when the run ends
                assert t.call is not None
                t.call.turn = None
                t.call.start = time.perf_counter() - self.t0
                t.state = RUNNING
                self.busy += 1
                t.park.release()
            return
        task = waiting[choice]
        call = task.call
        assert call is not None
        call.turn = len(self.steps)
        snapshot = {name: t.call for name, t in waiting.items() if t.call is not None} if quiet else None
        self.steps.append((choice, call, snapshot))
        task.call = None
        task.state = GRANTED
        self.busy += 1
        self.in_flight = task
        self._progressed()
        call.start = time.perf_counter() - self.t0
        task.park.release()
        if choice == END:  # the run ends here: the deliveries still waiting are left pending
            self._record(choice, call)
            self._done(task, None)
            self._end()
        elif choice in self.deliveries:
            # a bare thread: threading.Thread.start is the sub-actors' interception point (it takes this lock)
            _thread.start_new_thread(self._deliver, (task, call))

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

    def _progressed(self) -> None:
        """With the lock held: the run moved (a turn taken, a call answered); the stall deadline moves on."""
        self.deadline = max(self.deadline, time.monotonic() + self.patience)

    def _until_deadline(self, lock: threading.Lock) -> bool:
        """Acquire ``lock``, waiting while the run still progresses; False: no progress for ``patience``."""
        while True:
            remaining = self.deadline - time.monotonic()  # a float read: the deadline only moves later
            if remaining <= 0:
                return lock.acquire(False)
            if lock.acquire(True, remaining):
                return True

    def wait_over(self) -> None:
        """Block the run's owner until every actor is done or the run failed; a stall: no progress for ``patience``."""
        if self._until_deadline(self.over):
            return
        with self.lock:
            if self.failure is None:
                alive = [t.name for t in self.tasks.values() if t.parent is None and t.state != DONE]
                self._fail(RaceError(f"{self.stalled()} Still running: {', '.join(alive)}."))

    def stalled(self) -> RaceError:
        """The error for a run that ran out of time: which turn was never taken, or never answered."""
        turn = len(self.steps)
        nxt = self.in_flight.name if self.in_flight is not None else self.chooser.expected(self.tasks)
        where = self.chooser.describe(self.tasks)
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


__all__ = [
    "ABORT_GRACE",
    "NO_RETRIES",
    "Aborted",
    "GatedRun",
    "Step",
    "is_outcome",
]
