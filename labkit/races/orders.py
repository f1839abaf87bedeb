"""Every order: count and enumerate the orders of the actors' calls, count each actor's calls, run them all.

The order arithmetic (:func:`count_orders`, :func:`each_order`) is written here once; ``explore``'s
strategies, :func:`interleavings` and the exercise checker use it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..shared.errors import RaceError, ValidationError
from ..shared.validation import check_int, check_positive
from .interleave import Interleaving, Stage, check_actors, run_gated
from .types import Actor

if TYPE_CHECKING:
    from ..shared.backend import Connection

#: all_interleavings refuses to run more orders than this (the count grows factorially).
MAX_ORDERS = 2000


def count_orders(calls: Mapping[str, int]) -> int:
    """How many orders the given calls per actor have: the multinomial (sum n)! / prod(n!)."""
    count = math.factorial(sum(calls.values()))
    for n in calls.values():
        count //= math.factorial(n)
    return count


def each_order(calls: Mapping[str, int]) -> Iterator[tuple[str, ...]]:
    """Every order of the given calls per actor, in sorted order, one at a time (nothing is stored)."""
    names = sorted(calls)
    left = dict(calls)
    total = sum(calls.values())
    prefix: list[str] = []

    def extend() -> Iterator[tuple[str, ...]]:
        if len(prefix) == total:
            yield tuple(prefix)
            return
        for name in names:
            if left[name]:
                left[name] -= 1
                prefix.append(name)
                yield from extend()
                prefix.pop()
                left[name] += 1

    yield from extend()


def check_call_counts(
    calls: Mapping[str, int], actors: Iterable[str], *, least: int = 0, also: Iterable[str] = ()
) -> dict[str, int]:
    """``calls`` as a dict if it gives every actor, and only the actors (or the sub-actors ``also``
    names), an int >= ``least``."""
    names = set(actors)
    problems = []
    if missing := sorted(names - set(calls)):
        problems.append(f"no count for actor(s) {missing}")
    if unknown := sorted(set(calls) - names - set(also)):
        problems.append(f"a count for unknown actor(s) {unknown}")
    if problems:
        raise ValidationError(f"calls must give a count for exactly the actors {sorted(names)}: {'; '.join(problems)}")
    return {name: check_int(f"calls[{name!r}]", n, least=least) for name, n in calls.items()}


def interleavings(calls: Mapping[str, int]) -> list[tuple[str, ...]]:
    """Every order of the given calls per actor, sorted (``{"A": 1, "B": 1}`` -> AB, BA)."""
    for name, n in calls.items():
        check_int(f"calls[{name!r}]", n, least=0)
    count = count_orders(calls)
    if count > MAX_ORDERS:
        raise ValidationError(
            f"{dict(calls)} gives {count:,} orders, more than {MAX_ORDERS:,}; "
            "use fewer actors or fewer calls per actor (2-3 of each is plenty to show a race)"
        )
    return list(each_order(calls))


def _default_outcome(res: Interleaving) -> dict[str, Any]:
    codes = res.error_codes()
    return {name: codes.get(name, res.results.get(name)) for name in sorted({*res.results, *codes})}


#: One call of an actor's solo run: its operation and its request's parameters.
SoloCall = tuple[str, Mapping[str, Any]]


def solo_calls(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    timeout: float = 10.0,
    stage: Stage | None = None,
) -> dict[str, list[SoloCall]]:
    """The calls (operation, parameters) each actor makes, in order, when it runs alone after ``setup()``;
    the sub-actors it starts (``A.1``, ...) are listed with their own calls, after it. ``stage``: the
    lab's clients when the caller has them already (explore: made once for every run)."""
    check_positive("timeout", timeout)
    if stage is None:  # explore hands its own, made from actors it has checked
        check_actors(actors)
        stage = Stage.of(actors, conn)
    calls: dict[str, list[SoloCall]] = {}
    for name in actors:
        if setup is not None:
            setup()
        try:
            res = run_gated({name: actors[name]}, (), stage, timeout, True)
            if stage.replication is not None:
                stage.replication.settle()  # a solo run is not judged: its deliveries are made before the next setup
        except RaceError as exc:
            raise RaceError(
                f"counting calls, actor {name!r} ran alone after setup() and failed: {exc}"
            ) from exc.__cause__
        calls[name] = []
        for record in res.records:  # in start order; each task's own calls in its order
            calls.setdefault(str(record["actor"]), []).append(
                (str(record["operation"]), dict(record.get("params") or {}))
            )
        if not any(calls[task] for task in calls if task == name or task.startswith(f"{name}.")):
            given = " on the client it was given or" if stage.clients.get(name) is not None else ""
            raise RaceError(
                f"actor {name!r} made no DynamoDB call{given} on any botocore client from its thread "
                "(or threads it started), so there is nothing to interleave. Calls made in another "
                "process, or through a non-botocore library, cannot be gated"
            )
    return calls


def solo_operations(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    timeout: float = 10.0,
) -> dict[str, list[str]]:
    """The operations each actor makes, in order, when it runs alone after ``setup()`` (:func:`solo_calls`)."""
    found = solo_calls(actors, conn=conn, setup=setup, timeout=timeout)
    return {name: [operation for operation, _ in calls] for name, calls in found.items()}


def count_calls(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    timeout: float = 10.0,
) -> dict[str, int]:
    """How many DynamoDB calls each actor (and each sub-actor it starts) makes when it runs alone after ``setup()``."""
    return {name: len(ops) for name, ops in solo_operations(actors, conn=conn, setup=setup, timeout=timeout).items()}


def all_interleavings(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    outcome: Callable[[Interleaving], Any] | None = None,
    calls: Mapping[str, int] | None = None,
    timeout: float = 10.0,
    strict: bool = False,
) -> pd.DataFrame:
    """Run every order of the actors' calls: one row per order, ``order`` + ``outcome(res)``.

    Calls per actor come from a dry run of each actor alone after ``setup()`` unless ``calls``
    is given; ``setup()`` runs before every order. ``outcome`` returns a mapping (its keys become
    columns) or a single value (column ``outcome``); by default, each actor's result or error code.
    With ``strict=False`` an actor that ends before taking all its turns (e.g. it found the email
    taken and stopped) simply gives them up. ``df.attrs["calls"]`` holds the calls per actor.
    """
    check_actors(actors)
    check_positive("timeout", timeout)
    if calls is None:
        calls = count_calls(actors, conn=conn, setup=setup, timeout=timeout)
    else:
        calls = check_call_counts(calls, actors)
    judge = outcome or _default_outcome
    stage = Stage.of(actors, conn)
    rows: list[dict[str, Any]] = []
    for order in interleavings(calls):
        if setup is not None:
            setup()
        res = run_gated(actors, order, stage, timeout, strict)
        found = judge(res)
        row: dict[str, Any] = {"order": res.label}
        row.update(found if isinstance(found, Mapping) else {"outcome": found})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["calls"] = dict(calls)
    return df


__all__ = [
    "MAX_ORDERS",
    "SoloCall",
    "all_interleavings",
    "check_call_counts",
    "count_calls",
    "count_orders",
    "each_order",
    "interleavings",
    "solo_calls",
    "solo_operations",
]
