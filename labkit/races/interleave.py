"""Forced interleavings: run actors in one given order of their DynamoDB calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import RaceError, ValidationError, error_code
from ..faults import FaultSpec, plan_for
from ..validation import check_callable, check_positive
from .gate import ABORT_GRACE, NO_RETRIES, Aborted, GatedRun, Probe
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


def check_actors(actors: Mapping[str, Actor]) -> None:
    """ValidationError unless ``actors`` maps names without spaces to functions of one client."""
    if not actors:
        raise ValidationError("no actors given; pass e.g. {'A': fn_a, 'B': fn_b}")
    for name, fn in actors.items():
        if not isinstance(name, str) or not name or any(ch.isspace() for ch in name):
            raise ValidationError(f"actor name {name!r} must be a non-empty string without spaces")
        check_callable(f"actor {name!r}", fn, "a function of one DynamoDB client")


def gated_clients(actors: Mapping[str, Actor], conn: Connection) -> dict[str, Probe]:
    """A fresh client per actor, without botocore's retries, with a :class:`Probe` on it."""
    return {name: Probe(conn.new_client(**NO_RETRIES), name) for name in actors}


def run_gated(
    actors: Mapping[str, Actor],
    order: tuple[str, ...],
    probes: Mapping[str, Probe],
    timeout: float,
    strict: bool,
) -> Interleaving:
    """Run the actors once, concurrently, on their gated clients, their calls forced into ``order``.

    The arguments are already checked (:func:`run_interleaving` is the public way in); the
    probes are reused across runs of the same actors (:func:`~labkit.races.all_interleavings`).
    """
    run = GatedRun(order, time.monotonic() + timeout, strict)
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}

    def body(name: str) -> None:
        exc: BaseException | None = None
        try:
            results[name] = actors[name](probes[name].client)
        except BaseException as caught:  # recorded, judged by run.finished
            exc = caught
            if not isinstance(caught, Aborted):
                errors[name] = caught
        finally:
            run.finished(name, exc)

    for probe in probes.values():
        probe.session = run
    threads = [threading.Thread(target=body, args=(name,), name=f"labkit-actor-{name}", daemon=True) for name in actors]
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
        if run.failure is None:  # an aborted run stays attached: a late call raises Aborted
            for probe in probes.values():
                probe.session = None
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

    ``faults`` (e.g. ``["B2: lose-response"]``) injects DynamoDB's failures: see labkit.faults.
    """
    check_actors(actors)
    check_positive("timeout", timeout)
    steps = parse_order(order, actors)
    plan = plan_for(faults, steps, list(actors))  # checked before any client exists
    probes = gated_clients(actors, conn)
    plan.install(probes)
    try:
        return run_gated(actors, steps, probes, timeout, strict)
    finally:
        plan.close()


__all__ = ["Interleaving", "check_actors", "gated_clients", "parse_order", "run_gated", "run_interleaving"]
