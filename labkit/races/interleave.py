"""Forced interleavings: run actors in one given order of their DynamoDB calls."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import RaceError, ValidationError, error_code
from ..faults import FaultPlan, FaultSpec, plan_for
from ..intercept import Binding, bind_thread, endpoint_key, install
from ..validation import check_callable, check_positive
from .gate import ABORT_GRACE, NO_RETRIES, Aborted, GatedRun
from .history import history_frame
from .types import Actor

if TYPE_CHECKING:
    from ..backend import Connection

# ---------------------------------------------------------------- forced interleavings


@dataclass(frozen=True)
class Interleaving:
    """What one forced interleaving did: per-actor results or errors, and every call made."""

    order: tuple[str, ...]
    results: dict[str, Any]
    errors: dict[str, BaseException]
    history: pd.DataFrame = field(repr=False)
    turns: tuple[str, ...] = ()

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
        steps = order.split() if any(ch.isspace() for ch in order) else list(order)
    else:
        steps = list(order)
    known = set(actors)
    unknown = sorted({str(s) for s in steps if s not in known})
    if unknown:
        raise RaceError(
            f"the order {order!r} names unknown actor(s) {', '.join(map(repr, unknown))}; "
            f"the actors are {', '.join(map(repr, sorted(known)))}. Use only those names."
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
    """Where a run's calls may go: the lab's clients, the endpoint every client must use, faults."""

    clients: Mapping[str, Any]
    endpoint: str | None
    plan: FaultPlan | None = None

    @classmethod
    def of(cls, actors: Mapping[str, Actor], conn: Connection, plan: FaultPlan | None = None) -> Stage:
        endpoint = None if conn.backend == "aws" else endpoint_key(conn.endpoint_url)
        return cls(lab_clients(actors, conn), endpoint, plan)


def run_gated(
    actors: Mapping[str, Actor],
    order: tuple[str, ...],
    stage: Stage,
    timeout: float,
    strict: bool,
) -> Interleaving:
    """Run the actors once, concurrently, each on a thread bound to it, their calls forced into ``order``.

    Every DynamoDB call on an actor's thread (any botocore client: :mod:`labkit.intercept`)
    waits for its turn. The arguments are already checked (:func:`run_interleaving` is the public
    way in); a stage is reused across runs of the same actors (:func:`~labkit.races.all_interleavings`).
    """
    install()
    run = GatedRun(order, time.monotonic() + timeout, strict)
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}

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

    threads = []
    for name in actors:
        thread = threading.Thread(target=body, args=(name,), name=f"labkit-actor-{name}", daemon=True)
        bind_thread(thread, Binding(name, run, stage.plan, stage.endpoint))
        threads.append(thread)
    try:
        for t in threads:
            t.start()
        with run.cond:  # until every actor is done, the run failed, or time is up
            while run.done < len(threads) and run.failure is None:
                remaining = run.deadline - time.monotonic()
                if remaining <= 0:
                    alive = [t.name.removeprefix("labkit-actor-") for t in threads if t.is_alive()]
                    run.failure = RaceError(f"{run.stalled()} Still running: {', '.join(alive)}.")
                    run.cond.notify_all()
                    break
                run.cond.wait(remaining)
        for t in threads:  # waiting actors give up at once on failure; others get a moment
            t.join(ABORT_GRACE if run.failure is not None else None)
    finally:
        run.closed = True  # a late call (a thread an actor left running) is refused
    if run.failure is not None:
        raise run.failure
    taken = tuple(r["actor"] for r in sorted(run.rows, key=lambda r: r["start"]) if r.get("turn") is not None)
    return Interleaving(order, results, errors, history_frame(run.rows), taken)


def run_interleaving(
    actors: Mapping[str, Actor],
    order: str | Sequence[str],
    *,
    conn: Connection,
    timeout: float = 10.0,
    strict: bool = True,
    faults: FaultSpec | None = None,
) -> Interleaving:
    """Run the actors concurrently, their DynamoDB calls forced into ``order`` (a turn = a call).

    An actor is ``fn(client)`` (it gets a fresh lab client without botocore's retries) or ``fn()``
    (it uses its own clients, resources or PynamoDB models: every DynamoDB call made on its
    thread, or on threads it starts, is gated and recorded all the same). ``faults`` (e.g.
    ``["B2: lose-response"]``) injects DynamoDB's failures: see labkit.faults.
    """
    check_actors(actors)
    check_positive("timeout", timeout)
    steps = parse_order(order, actors)
    plan = plan_for(faults, steps, list(actors))  # checked before any client exists
    try:
        return run_gated(actors, steps, Stage.of(actors, conn, plan), timeout, strict)
    finally:
        plan.close()


__all__ = [
    "Interleaving",
    "Stage",
    "check_actors",
    "lab_clients",
    "parse_order",
    "run_gated",
    "run_interleaving",
    "takes_client",
]
