"""Forced interleavings: run actors in one given order of their DynamoDB calls."""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..engine_plugins.faults import FaultPlan, FaultSpec, plan_for
from ..engine_plugins.faults.control import need_weak_answers, settle_images
from ..shared.errors import RaceError, ValidationError, error_code
from ..shared.intercept import Binding, bind_thread, bound, endpoint_key, install
from ..shared.validation import check_callable, check_positive
from .choosers import Chooser, OrderChooser
from .gate import ABORT_GRACE, NO_RETRIES, Aborted, GatedRun, Step
from .identity import KeySchemas
from .keys import call_key
from .replication import Replication, check_converge, is_delivery, split_turns, writer_of
from .tasks import sub_actor_of
from .types import Actor

if TYPE_CHECKING:
    import pandas as pd

    from ..shared.backend import Connection

# ---------------------------------------------------------------- forced interleavings


@dataclass(frozen=True)
class Interleaving:
    """What one forced interleaving did: per-actor results or errors, and every call made.

    ``errors`` holds the actors' (and their threads') DynamoDB outcomes; ``history`` is built
    from ``records`` (one dict per call, in the order the calls started) when first read.
    """

    order: tuple[str, ...]
    results: dict[str, Any]
    errors: dict[str, BaseException]
    records: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    turns: tuple[str, ...] = ()
    #: each turn: who went, and every task that was waiting -> the call it waited with
    steps: tuple[Step, ...] = field(default=(), repr=False, compare=False)

    @functools.cached_property
    def history(self) -> pd.DataFrame:
        """One row per call (:data:`~labkit.races.HISTORY_COLUMNS`), in the order they started."""
        from .history import history_frame

        return history_frame(self.records)

    @property
    def label(self) -> str:
        """The order as ``"A B A B"``."""
        return " ".join(self.order)

    def error_codes(self) -> dict[str, str]:
        """Each failed actor's DynamoDB error code (``ConditionalCheckFailedException``, ...)."""
        return {name: error_code(exc) for name, exc in self.errors.items()}


def parse_order(order: str | Sequence[str], actors: Iterable[str]) -> tuple[str, ...]:
    """``"ABAB"``, ``"A B A B"`` or ``["A", "B", "A", "B"]`` -> ``("A", "B", "A", "B")``."""
    if isinstance(order, str):
        # "ABAB" is four turns; a sub-actor's name ("A.1") is never split into letters; a delivery
        # ("[A1 -> us-east-1]") is one turn
        spaced = any(ch.isspace() for ch in order) or "." in order or "[" in order
        steps = split_turns(order) if spaced else list(order)
    else:
        steps = list(order)
    known = list(actors)

    def named(step: str) -> bool:
        writer = writer_of(step) if is_delivery(step) else step
        return writer == "" or (writer is not None and (writer in known or sub_actor_of(writer, known)))

    unknown = sorted({str(s) for s in steps if not named(str(s))})
    if unknown:
        raise RaceError(
            f"the order {order!r} names unknown actor(s) {', '.join(map(repr, unknown))}; "
            f"the actors are {', '.join(map(repr, sorted(known)))} (and the threads they start: "
            "A.1, A.2, ... in start order; and the deliveries of their writes to a global table: "
            "[A1 -> us-east-1]). Use only those names."
        )
    return tuple(steps)


def takes_client(name: str, fn: Actor) -> bool:
    """True for an actor of one argument (it is handed the lab's client), False for one of none.

    Anything else is a ValidationError: an actor is ``fn()`` (it uses its own clients, resources
    or models) or ``fn(client)``.
    """
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: as before, one client
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in positional and p.default is inspect.Parameter.empty]
    required_kw = [
        p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if len(required) > 1 or required_kw:
        names = ", ".join(p.name for p in [*required, *required_kw])
        raise ValidationError(
            f"actor {name!r} needs the arguments ({names}); an actor is a function of no arguments "
            "(it makes its calls with its own clients, resources or models) or of one (the DynamoDB "
            "client the lab gives it) — wrap it, e.g. lambda: sign_up(table, 'ann@example.com')"
        )
    return len(required) == 1


def check_actors(actors: Mapping[str, Actor]) -> None:
    """ValidationError unless ``actors`` maps names without spaces to functions of none or one client."""
    if not actors:
        raise ValidationError("no actors given; pass e.g. {'A': fn_a, 'B': fn_b}")
    for name, fn in actors.items():
        if not isinstance(name, str) or not name or any(ch.isspace() for ch in name):
            raise ValidationError(f"actor name {name!r} must be a non-empty string without spaces")
        check_callable(f"actor {name!r}", fn, "a function of no arguments, or of one DynamoDB client")
        takes_client(name, fn)


def lab_clients(actors: Mapping[str, Actor], conn: Connection) -> dict[str, Any]:
    """A fresh client without botocore's retries for each actor of one argument (None for the others)."""
    return {name: conn.new_client(**NO_RETRIES) if takes_client(name, fn) else None for name, fn in actors.items()}


@dataclass(frozen=True)
class Stage:
    """Where a run's calls may go: the lab's clients, the endpoint every client must use, faults, and
    the tables' key schemas (DescribeTable, once per table: what names each call's item in the history)."""

    clients: Mapping[str, Any]
    endpoint: str | None
    plan: FaultPlan | None = None
    schemas: KeySchemas | None = None
    #: the lab's hold on replication (:mod:`~labkit.races.replication`): deliveries as steps while active
    replication: Replication | None = None

    @classmethod
    def of(
        cls, actors: Mapping[str, Actor], conn: Connection, plan: FaultPlan | None = None, converge: bool = True
    ) -> Stage:
        endpoint = None if conn.backend == "aws" else endpoint_key(conn.endpoint_url)
        replication = Replication(conn, converge) if conn.backend == "embedded" else None
        return cls(lab_clients(actors, conn), endpoint, plan, KeySchemas(conn), replication)


class Crew:
    """One long-lived thread per actor, reused run after run (explore: no thread start per run).

    Each run hands every thread its job; the thread is bound to the run's actor for the job's
    duration only. A job is given only once the run before it is over, so one slot and one
    plain lock per thread are enough. :meth:`close` ends the threads (one stuck in an actor is
    left behind, a daemon).
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.slot: dict[str, Callable[[], None] | None] = {}
        self.go: dict[str, Any] = {}
        for name in names:
            self.slot[name] = None
            self.go[name] = go = threading.Lock()
            go.acquire()
            thread = threading.Thread(target=self._serve, args=(name,), name=f"labkit-explore-{name}", daemon=True)
            thread.start()

    def _serve(self, name: str) -> None:
        while True:
            self.go[name].acquire()
            job = self.slot[name]
            if job is None:
                return
            job()

    def give(self, name: str, job: Callable[[], None] | None) -> None:
        self.slot[name] = job
        self.go[name].release()

    def close(self) -> None:
        for name in self.slot:
            self.give(name, None)


def run_gated(
    actors: Mapping[str, Actor],
    order: tuple[str, ...] | Chooser,
    stage: Stage,
    timeout: float,
    strict: bool,
    *,
    max_calls: int | None = None,
    crew: Crew | None = None,
) -> Interleaving:
    """Run the actors once, concurrently, each on a thread bound to it, their calls forced into ``order``.

    Every DynamoDB call on an actor's thread, or on threads and pool tasks it starts (any
    botocore client: :mod:`labkit.shared.intercept`), waits for its turn. ``order`` is the order of turns
    (:class:`~labkit.races.choosers.OrderChooser`) or explore's chooser. The arguments are already
    checked (:func:`run_interleaving` is the public way in); a stage is reused across runs of the
    same actors (:func:`~labkit.races.all_interleavings`), and so is a crew (explore).
    """
    install()
    chooser = OrderChooser(order, strict) if isinstance(order, tuple) else order
    replication = stage.replication if stage.replication is not None and stage.replication.active else None
    if replication is not None:
        replication.settle()  # a run starts converged: setup's writes are delivered
    run = GatedRun(chooser, time.monotonic() + timeout, max_calls, replication)
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    bindings = {name: Binding(name, run, stage.plan, stage.endpoint) for name in actors}
    for binding in bindings.values():
        run.add_actor(binding)

    def body(name: str) -> None:
        exc: BaseException | None = None
        client = stage.clients.get(name)
        try:
            results[name] = actors[name](client) if client is not None else actors[name]()
        except BaseException as caught:  # recorded, judged by run.finished
            exc = caught
            if not isinstance(caught, Aborted):
                errors[name] = caught
        finally:
            run.finished(name, exc)

    threads: list[threading.Thread] = []
    try:
        if crew is not None:
            for name in actors:

                def job(name: str = name) -> None:
                    with bound(bindings[name]):
                        body(name)

                crew.give(name, job)
        else:
            for name in actors:
                thread = threading.Thread(target=body, args=(name,), name=f"labkit-actor-{name}", daemon=True)
                bind_thread(thread, bindings[name])
                threads.append(thread)
            for t in threads:
                t.start()
        run.wait_over()  # every actor is done, the run failed, or time is up
        for t in threads:  # waiting actors give up at once on failure; others get a moment
            t.join(ABORT_GRACE if run.failure is not None else None)
    finally:
        run.closed = True  # a late call (a thread an actor left running) is refused
    if run.failure is not None:
        raise run.failure
    if replication is not None and replication.converge:
        replication.settle()  # the deliveries the run never made: made before the invariant is judged
    ended = chooser.check_end(run.tasks)
    if ended is not None:
        raise ended
    errors.update(run.errors)
    if stage.schemas is not None:
        name_items(run, stage.schemas)
    rows = sorted(run.rows, key=lambda r: r["start"])
    taken = tuple(r["actor"] for r in rows if r.get("turn") is not None)
    order_given = tuple(getattr(chooser, "requested", ())) if not isinstance(order, tuple) else order
    return Interleaving(order_given, results, errors, tuple(rows), taken, tuple(run.steps))


def name_items(run: GatedRun, schemas: KeySchemas) -> None:
    """Each recorded call's ``key``, its item named by its table's key schema (:func:`~labkit.races.call_key`).

    Asked here, on the lab's own thread once the run is over, never inside a call: the DescribeTable
    is made unbound, and a sub-actor's thread unbound for a moment is one its parent's ``join`` would
    not see (the parent would count as running, and the run stall).
    """
    for row in run.rows:
        row["key"] = call_key(row["operation"], row.get("params") or {}, functools.partial(schemas, row.get("region")))
    for _, chosen, waiting in run.steps:
        for record in (chosen, *(waiting or {}).values()):
            record.key = call_key(record.operation, record.params, functools.partial(schemas, record.region))


def run_interleaving(
    actors: Mapping[str, Actor],
    order: str | Sequence[str],
    *,
    conn: Connection,
    timeout: float = 10.0,
    strict: bool = True,
    faults: FaultSpec | None = None,
    converge: bool = True,
) -> Interleaving:
    """Run the actors concurrently, their DynamoDB calls forced into ``order`` (a turn = a call).

    An actor is ``fn(client)`` (it gets a fresh lab client without botocore's retries) or ``fn()``
    (it uses its own clients, resources or PynamoDB models: every DynamoDB call made on its
    thread is gated and recorded all the same). A thread or pool task the actor starts is a
    sub-actor with turns of its own: ``A.1``, ``A.2`` in start order (``"A.1 B A"``). ``faults``
    (e.g. ``["B2: lose-response"]``, ``["A.1#1: lose-response"]``) injects DynamoDB's failures and,
    on labkit's embedded endpoint, its weak answers (``["B2: stale-read"]``; with a stale read the
    endpoint first forgets the earlier images it keeps, so the read undoes a write of this run,
    never one made before it): see labkit.engine_plugins.faults.

    On labkit's embedded endpoint replication is held during the run: each delivery of a write to a
    global table is a turn of its own, named ``[A1 -> us-east-1]`` (:mod:`~labkit.races.replication`);
    those the order does not name are made when the run ends (``converge=False``: left pending).
    """
    check_actors(actors)
    check_positive("timeout", timeout)
    check_converge(converge)
    steps = parse_order(order, actors)
    names = [*actors, *dict.fromkeys(s for s in steps if s not in actors)]  # sub-actors the order names
    plan = plan_for(faults, steps, names)  # checked before any client exists
    need_weak_answers(conn, plan.embedded_labels())
    if {"stale-read", "torn-read"} & set(plan.weak_labels()):  # as explore's: it undoes this run's writes only
        settle_images(conn)
    stage = Stage.of(actors, conn, plan, converge)
    if stage.schemas is not None:
        from .views import Resolver  # a view named by the run's writes (``B3: stale-read (misses A1)``)

        plan.resolver = Resolver(stage.schemas)
    try:
        with stage.replication.held() if stage.replication is not None else contextlib.nullcontext():
            return run_gated(actors, steps, stage, timeout, strict)
    finally:
        plan.close()


__all__ = [
    "Crew",
    "Interleaving",
    "Stage",
    "check_actors",
    "lab_clients",
    "name_items",
    "parse_order",
    "run_gated",
    "run_interleaving",
    "takes_client",
]
