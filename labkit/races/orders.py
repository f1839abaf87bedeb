"""Every order: count each actor's calls, enumerate the interleavings, run them all."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import RaceError, ValidationError
from .interleave import Interleaving, _check_actors, _check_timeout, _gated_clients, _run, parse_order
from .types import Actor

if TYPE_CHECKING:
    from ..backend import Connection

#: all_interleavings refuses to run more orders than this (the count grows factorially).
MAX_ORDERS = 2000


def interleavings(calls: Mapping[str, int]) -> list[tuple[str, ...]]:
    """Every order of the given calls per actor, sorted (``{"A": 1, "B": 1}`` -> AB, BA)."""
    for name, n in calls.items():
        if not isinstance(n, int) or n < 0:
            raise ValidationError(f"calls[{name!r}] must be a non-negative int, not {n!r}")
    total = sum(calls.values())
    count = math.factorial(total)
    for n in calls.values():
        count //= math.factorial(n)
    if count > MAX_ORDERS:
        raise ValidationError(
            f"{dict(calls)} gives {count:,} orders, more than {MAX_ORDERS:,}; "
            "use fewer actors or fewer calls per actor (2-3 of each is plenty to show a race)"
        )
    orders: list[tuple[str, ...]] = []

    def extend(prefix: list[str], left: dict[str, int]) -> None:
        if not any(left.values()):
            orders.append(tuple(prefix))
            return
        for name in sorted(left):
            if left[name]:
                left[name] -= 1
                prefix.append(name)
                extend(prefix, left)
                prefix.pop()
                left[name] += 1

    extend([], dict(calls))
    return orders


def _default_outcome(res: Interleaving) -> dict[str, Any]:
    codes = res.error_codes()
    return {name: codes.get(name, res.results.get(name)) for name in sorted({*res.results, *codes})}


def count_calls(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    timeout: float = 10.0,
) -> dict[str, int]:
    """How many DynamoDB calls each actor makes when it runs alone after ``setup()``."""
    _check_actors(actors)
    probes = _gated_clients(actors, conn)
    calls: dict[str, int] = {}
    for name in actors:
        if setup is not None:
            setup()
        try:
            res = _run({name: actors[name]}, (), {name: probes[name]}, timeout, True)
        except RaceError as exc:
            raise RaceError(
                f"counting calls, actor {name!r} ran alone after setup() and failed: {exc}"
            ) from exc.__cause__
        calls[name] = len(res.history)
        if calls[name] == 0:
            raise RaceError(
                f"actor {name!r} made no DynamoDB call on the client it was given, so there is "
                "nothing to interleave; make its calls with that client"
            )
    return calls


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
    _check_actors(actors)
    _check_timeout(timeout)
    if calls is None:
        calls = count_calls(actors, conn=conn, setup=setup, timeout=timeout)
    else:
        parse_order(list(calls), actors)
        missing = sorted(set(actors) - set(calls))
        if missing:
            raise ValidationError(f"calls gives no count for actor(s) {missing}; add them")
    judge = outcome or _default_outcome
    probes = _gated_clients(actors, conn)
    rows: list[dict[str, Any]] = []
    for order in interleavings(calls):
        if setup is not None:
            setup()
        res = _run(actors, order, probes, timeout, strict)
        found = judge(res)
        row: dict[str, Any] = {"order": res.label}
        row.update(found if isinstance(found, Mapping) else {"outcome": found})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["calls"] = dict(calls)
    return df


__all__ = ["MAX_ORDERS", "all_interleavings", "count_calls", "interleavings"]
