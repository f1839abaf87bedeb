"""The runner: the loop of an exploration, and the one place an explored schedule really runs.

:func:`~labkit.races.explore` makes one :class:`Runner` and hands it a scheduler
(:class:`~labkit.races.calls.Scheduler`: exhaustive, DPOR, PCT) per stage of its portfolio.
:meth:`Runner.explore` is the loop (awslabs/shuttle's ``Runner::run``): ask the scheduler how the
next run begins, run it — setup, one gated run (:func:`~labkit.races.interleave.run_gated`), the
turns the scheduler forces first, then at each quiet point the waiting task it names — check the
run's calls against every earlier run's (determinism, here and only here), judge it, and hand the
calls back to the scheduler; until the scheduler has nothing left or its runs are spent. Every call
of every run is gated and comes back in turn order, each with the tasks that were waiting at its turn.

What a run costs is kept to what it must do: the lab's clients are made once per exploration,
the actors run on one long-lived thread each (:class:`~labkit.races.interleave.Crew`), the history
DataFrame is built only if the invariant reads it, and each table's key schema is asked once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..engine_plugins.faults import FaultPlan, parse_faults
from ..engine_plugins.faults.control import settle_images
from ..engine_plugins.faults.kinds import VIEWED, StaleRead, TornRead
from ..engine_plugins.faults.views import BEHIND
from ..shared.catalogue import WEAK_ANSWER_NONE, Op, WeakAnswer, tables_of
from ..shared.errors import RaceError
from ..shared.intercept import CallRecord
from .anomalies import Anomaly, find
from .calls import BudgetSpent, Call, Coverage, Scheduler, Trace, nondeterministic, nondeterministic_turn
from .choosers import Chooser, OrderChooser
from .identity import Access, KeySchemas
from .interleave import Crew, Interleaving, Stage, run_gated
from .scenarios import Scenarios
from .tasks import BLOCKED, DONE, QUEUED, Task
from .views import TORN_READ_ACCESS, Resolver, torn_write

if TYPE_CHECKING:
    from ..shared.backend import Connection
    from .types import Actor


#: What every write to a table a stale read reads also touches: such writes all conflict, so their order is explored.
STALE_GROUP = Access("\0stale-read", None, None, True)


def _stale_tables(operation: str, params: Mapping[str, Any]) -> set[str]:
    """The tables a stale read's answer depends on the order of writes to (none for a GetItem: one key)."""
    return set() if operation == Op.GET_ITEM else set(tables_of(operation, params))


_TORN = TornRead()


class Violation(Exception):
    """A run broke the invariant: ends the exploration with ``res`` as the counterexample."""

    def __init__(self, res: Interleaving, message: str, trace: Trace | None = None) -> None:
        super().__init__(message)
        self.res = res
        self.message = message
        self.trace = trace


class ExactChooser:
    """The chooser of a scheduled run: each forced turn taken as given, then ``next_task`` at each quiet point.

    Forced turns are calls earlier runs made after the same turns: a turn is granted as soon as
    its task waits (no need for quiet); a task that cannot take it is a determinism failure.
    """

    def __init__(self, order: Sequence[str], next_task: Callable[[Sequence[str]], str]) -> None:
        self.order = tuple(order)
        self.next_task = next_task
        self.taken: list[str] = []

    @property
    def requested(self) -> tuple[str, ...]:
        return self.order

    def choose(self, tasks: Mapping[str, Task], waiting: Mapping[str, Task], quiet: bool) -> str | None:
        pos = len(self.taken)
        if pos < len(self.order):
            name = self.order[pos]
            if name in waiting:
                self.taken.append(name)
                return name
            task = tasks.get(name)
            if task is not None and task.state == DONE:
                raise self._not_followed(pos, "it had finished")
            if quiet:
                state = (
                    "it had not been started"
                    if task is None
                    else task.describe()
                    if task.state in (BLOCKED, QUEUED)
                    else f"it was {task.state}"
                )
                raise self._not_followed(pos, state)
            return None
        if not quiet:
            return None
        name = self.next_task(sorted(waiting))
        self.taken.append(name)
        return name

    def _not_followed(self, pos: int, state: str) -> RaceError:
        return nondeterministic_turn(self.order, pos, state)

    def expected(self, tasks: Mapping[str, Task]) -> str | None:
        pos = len(self.taken)
        return self.order[pos] if pos < len(self.order) else None

    def describe(self, tasks: Mapping[str, Task]) -> str:
        return f"order {' '.join(self.order)!r}, turns taken so far: {' '.join(self.taken) or '(none)'}"

    def check_end(self, tasks: Mapping[str, Task]) -> RaceError | None:
        return None


class Runner:
    """Runs schedules for every strategy: setup, the run, the invariant, the determinism check.

    :meth:`explore` is the loop a scheduler runs in. ``runs`` counts the runs made so far;
    ``seen`` remembers, for every order prefix, the call made at its end, so an actor that makes
    another call after the same prefix in a later run is caught (:func:`nondeterministic`).
    ``names`` are the actors and the sub-actors the fault scenarios may name.
    """

    def __init__(
        self,
        actors: Mapping[str, Actor],
        conn: Connection,
        setup: Callable[[], Any] | None,
        invariant: Callable[[Interleaving], Any] | None,
        timeout: float,
        max_calls: int,
        names: Sequence[str] = (),
        points: Mapping[str, Sequence[tuple[str, Mapping[str, Any]]]] | None = None,
        lab: Stage | None = None,
        allow: frozenset[str] = frozenset(),
    ) -> None:
        self.actors = actors
        self.conn = conn
        self.setup = setup
        self.invariant = invariant
        self.timeout = timeout
        self.max_calls = max_calls
        self.names = [*actors, *(n for n in names if n not in actors)]
        self.runs = 0
        self.seen: dict[tuple[str, ...], Call] = {}  # order prefix -> the call made at its end
        self.faults: tuple[str, ...] = ()  # the fault scenario of the runs to come
        self.points = dict(points or {})  # each task's solo calls: where the scenarios' faults land
        self.stale = False  # the scenario holds a stale read: each run starts from settled images
        self.scenarios: Scenarios | None = None  # where a run without faults offers its call points
        self.widen: frozenset[str] = frozenset()  # tables whose writes all conflict (a stale read reads them)
        self.torn: frozenset[tuple[str, int]] = frozenset()  # the calls a torn read lands on (actor, call number)
        self.torn_any = False  # a run without a fault where torn-read is asked for: every read it may land on
        self.stage = lab or Stage.of(actors, conn)
        self.schemas = self.stage.schemas or KeySchemas(conn)  # one DescribeTable per table: keys and reduction
        self.resolver = Resolver(self.schemas)  # a weak answer's view named by the run's writes -> the engine's form
        self._crew: Crew | None = None
        self._calls: dict[int, Call] = {}
        self.allow = allow  # the anomalies a test accepts (explore's allow=[...])
        self.anomalies: dict[str, Anomaly] = {}  # the first of each kind the explored runs showed

    def use(self, faults: tuple[str, ...]) -> None:
        """Run the next orders with these faults (a scenario): another program, so determinism restarts."""
        self.faults = tuple(faults)
        self.seen = {}
        self.stale, self.widen = self._stale_reads(self.faults)
        self.torn = frozenset(
            (actor, n)
            for actor, calls in parse_faults(list(self.faults), self.names).items()
            for n, fault in calls.items()
            if isinstance(fault, TornRead)
        )
        # the runs without a fault offer the torn views: which reads ran while a transaction may have been in
        # flight must be explored there too, or a torn view is never offered (the differential found it)
        self.torn_any = not self.faults and self.scenarios is not None and WeakAnswer.TORN_READ in self.scenarios.faults

    def _stale_reads(self, faults: tuple[str, ...]) -> tuple[bool, frozenset[str]]:
        """Does the scenario hold a stale or torn read; the tables a stale read's solo call reads (a first guess,
        grown per run) when its view is a prefix of the writes to what it reads (plain, or ``behind N``).

        A stale Query, Scan or BatchGetItem answers as of before the most recent commit to *any*
        item it reads (one snapshot, over every table a BatchGetItem names), so the order of
        writes to different items of those tables changes its answer: every write to any of them
        conflicts with every other (:data:`STALE_GROUP`). A stale GetItem steps back through its
        own key's writes, which conflict already. Which call the fault lands on is known only
        when it runs (an actor's n-th call may be a GetItem alone and a Scan in another order):
        the solo run's call is the first guess, and :meth:`run` widens from the call really made.
        A view named by the run's writes (``misses A1``, ``index misses A1``, a torn read's) needs no
        widening: the writes it names, and every later write to their items, meet the read already.
        """
        stale, tables = False, set()
        for actor, calls in parse_faults(list(faults), self.names).items():
            for n, fault in calls.items():
                if not isinstance(fault, StaleRead | TornRead):
                    continue
                stale = True
                if isinstance(fault, TornRead) or (fault.view is not None and fault.view.kind != BEHIND):
                    continue
                solo = self.points.get(actor, [])
                if n <= len(solo):
                    tables.update(_stale_tables(*solo[n - 1]))
        return stale, frozenset(tables)

    def _widen_from(self, res: Interleaving) -> bool:
        """Add the tables this run's stale read really read; True when that widened the scenario."""
        read: set[str] = set()
        for _, record, _ in res.steps:
            label = record.injected or ""
            rest = label.removeprefix(WeakAnswer.STALE_READ)
            if rest != label and (not rest or rest.startswith((f" ({BEHIND} ", f" ({WEAK_ANSWER_NONE}"))):
                read.update(_stale_tables(record.operation, record.params))
        if read <= self.widen:
            return False
        self.widen |= read
        self.seen = {}  # the calls' accesses changed: what earlier runs made is compared anew
        return True

    def close(self) -> None:
        """End the actors' threads."""
        if self._crew is not None:
            self._crew.close()
            self._crew = None

    def explore(self, scheduler: Scheduler, limit: int) -> Coverage:
        """The loop: run what ``scheduler`` asks for until it has nothing left or ``runs`` reaches ``limit``.

        Raises :class:`Violation` when a run breaks the invariant, :class:`BudgetSpent` when the
        runs are spent before a scheduler that promises coverage is done.
        """
        scheduler.new_scenario()
        while self.runs < limit or not scheduler.samples:
            forced = scheduler.new_run()
            if forced is None:
                return scheduler.coverage()
            if self.runs >= limit:
                raise BudgetSpent
            scheduler.end_run(self.run(forced, scheduler))
        return scheduler.coverage()

    def run(self, forced: Sequence[str], scheduler: Scheduler) -> Trace:
        """One run: ``forced`` first, then the waiting task ``scheduler.next_task`` names at each quiet point.

        Returns the run's calls; raises :class:`Violation` when the invariant fails.
        """
        chooser: Chooser = (
            ExactChooser(forced, scheduler.next_task)
            if scheduler.exact
            else OrderChooser(forced, False, lookahead=True, then=())
        )
        res, trace = self._run(chooser, self.faults)
        if not self.faults and self.scenarios is not None:
            viewed = [f for f in self.scenarios.faults if f in VIEWED]
            before: list[CallRecord] = []
            for name, record, _ in res.steps:
                views = {f: self.resolver.views_at(f, record, before) for f in viewed}
                self.scenarios.offer(name, record.seq + 1, record.operation, record.params, views)
                before.append(record)
        if self.stale and self._widen_from(res):
            trace = replace(self.trace(res), widened=True)
        self._check_deterministic(trace)
        found = self.anomalies_of(res)
        for anomaly in found:
            self.anomalies.setdefault(anomaly.kind, anomaly)
        verdict = self.judge(res, found)
        if verdict is not None:
            raise Violation(res, verdict, trace)
        return trace

    def attempt(self, order: Sequence[str], faults: tuple[str, ...]) -> tuple[Interleaving, Trace, str | None]:
        """One run of ``order`` as far as it can be followed, with ``faults``: the run and the invariant's verdict.

        For shrinking: the order is a candidate, not a replay, so its turns are taken where they
        can be and determinism is not checked; the run counts in ``runs``.
        """
        res, trace = self._run(OrderChooser(order, False, lookahead=True, then=()), faults)
        return res, trace, self.judge(res)

    def _run(self, chooser: Chooser, faults: tuple[str, ...]) -> tuple[Interleaving, Trace]:
        replication = self.stage.replication
        if replication is not None and not replication.converge:
            replication.settle()  # the last run's leftovers, made before setup puts the table back
        if self.setup is not None:
            self.setup()
        if self.stale if faults == self.faults else self._stale_reads(faults)[0]:
            settle_images(self.conn)
        self.runs += 1
        plan = FaultPlan(parse_faults(list(faults), self.names), where_possible=True) if faults else None
        if plan is not None:
            plan.resolver = self.resolver
        if self._crew is None:
            self._crew = Crew(self.actors)
        try:
            res = run_gated(
                self.actors,
                chooser,
                replace(self.stage, plan=plan) if plan is not None else self.stage,
                self.timeout,
                False,
                max_calls=self.max_calls,
                crew=self._crew,
            )
        except RaceError as exc:
            self._crew = None  # an actor's thread may be stuck in it: the next run gets new ones
            with_faults = f" with {', '.join(faults)}" if faults else ""
            order = getattr(chooser, "requested", ())
            raise RaceError(
                f"explore run {self.runs} (order prefix {' '.join(order)!r}{with_faults}): {exc}"
            ) from exc.__cause__
        finally:
            if plan is not None:
                plan.close()
        return res, self.trace(res)

    def trace(self, res: Interleaving) -> Trace:
        """The run's calls in turn order, each turn with the calls of the tasks that waited at it."""
        calls: list[Call] = []
        enabled: list[dict[str, Call]] = []
        last: dict[str, str] = {}  # each task's latest call so far: a torn read's transaction may be in flight
        for name, record, waiting in res.steps:
            calls.append(self._call(record, last))
            enabled.append({n: self._call(r, last) for n, r in waiting.items()} if waiting is not None else {})
            last[record.actor] = record.operation
            del name
        self._calls.clear()
        return Trace(calls, enabled, tuple(c.actor for c in calls))

    def _call(self, record: CallRecord, last: Mapping[str, str]) -> Call:
        found = self._calls.get(id(record))
        if found is None:
            found = Call.of(record, self.schemas)
            if self.widen and any(a.write and a.table in self.widen for a in found.touches):
                found = replace(found, touches=found.touches | {STALE_GROUP})
            if self.torn or self.torn_any:
                # the torn read, and the call that ends its actor's transaction's time in flight: their order decides
                extra: set[Access] = set()
                if (record.actor, record.seq + 1) in self.torn or (
                    self.torn_any and _TORN.gives(record.operation, record.params)
                ):
                    extra.add(TORN_READ_ACCESS)
                if last.get(record.actor) == Op.TRANSACT_WRITE_ITEMS:
                    extra.add(torn_write(record.actor))
                if extra:
                    found = replace(found, touches=found.touches | extra)
            self._calls[id(record)] = found
        return found

    def _check_deterministic(self, trace: Trace) -> None:
        """Every call this run made, and every call a task waited with, is the call earlier runs made there.

        ``seen`` maps a prefix of turns to the call made at its end: after the turns ``p``, the
        task ``q`` that went (or waited) must have made the same call in every run. The one place
        determinism is checked.
        """
        taken: tuple[str, ...] = ()
        for i, call in enumerate(trace.calls):
            for name, waiting in trace.enabled[i].items():
                before = self.seen.setdefault((*taken, name), waiting)
                if before != waiting:
                    raise nondeterministic((*taken, name), waiting, before)
            taken = (*taken, call.actor)
            before = self.seen.setdefault(taken, call)
            if before != call:
                raise nondeterministic(taken, call, before)

    def anomalies_of(self, res: Interleaving) -> list[Anomaly]:
        """The anomalies the run's history shows (:mod:`~labkit.races.anomalies`), but those allowed."""
        found = find(res.records, self.schemas, failed=set(res.errors), allow=self.allow)
        return [replace(a, order=" ".join(res.turns), faults=self.faults) for a in found]

    def judge(self, res: Interleaving, found: Sequence[Anomaly] | None = None) -> str | None:
        """The run's verdict: the invariant's, or with none given, the first anomaly its history shows."""
        if self.invariant is None:
            found = self.anomalies_of(res) if found is None else found
            if not found:
                return None
            more = f" (and {len(found) - 1} more anomal{'ies' if len(found) > 2 else 'y'})" if len(found) > 1 else ""
            return f"{found[0].message}{more}"
        try:
            verdict = self.invariant(res)
        except AssertionError as exc:
            return str(exc) or "the invariant raised AssertionError"
        if verdict is False:
            return "the invariant returned False"
        return None


__all__ = ["ExactChooser", "Runner", "Violation"]
