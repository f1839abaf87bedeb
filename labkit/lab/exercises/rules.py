"""The rules a solution must keep, checked before and after it runs.

Before: :func:`signature_problem` (the checker can call it). After each run or forced order:
:func:`check_calls` (no DeleteTable, no other table, no key outside the exercise's keys) and
:func:`check_raised` (a stub is "not solved yet"; only the exercise's documented errors may be
raised). A broken rule ends the check by raising :class:`~.outcomes.Stop`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...races import Interleaving
from ...shared.catalogue import Op
from .outcomes import ALLOWED_OPERATIONS, Outcome, RecordedCall, Stop, call_text, last_line, person
from .verdict import NOT_SOLVED, Finding


def signature_problem(solution: Any, expected: str, sample: Sequence[Any]) -> Finding | None:
    """None when ``solution(client, table_name, *sample)`` binds; else a wrong-signature finding."""
    if not callable(solution):
        return Finding(
            "wrong-signature",
            f"the solution is a {type(solution).__name__}, not a function; define `def solution{expected}:`",
        )
    try:
        sig = inspect.signature(solution)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(object(), "table", *sample)
    except TypeError as exc:
        name = getattr(solution, "__name__", "solution")
        return Finding(
            "wrong-signature",
            f"the checker calls solution{expected}, but yours is {name}{sig} ({exc}); change its parameters to match",
        )
    return None


def check_calls(
    calls: Sequence[RecordedCall],
    *,
    table: str,
    allowed: Callable[[str, str], bool],
    keys_hint: str,
    res: Interleaving | None = None,
) -> None:
    """No DeleteTable, no other table, no key outside the exercise's keys."""
    order = res.label if res is not None else None
    for call in calls:
        who = person(call.actor)
        if call.operation == Op.DELETE_TABLE:
            raise Stop(
                Finding(
                    "deleted-table",
                    f"{who}'s call DeleteTable deleted the table; a solution only ever touches its own items",
                    order,
                    res,
                )
            )
        if call.operation not in ALLOWED_OPERATIONS:
            raise Stop(
                Finding(
                    "outside-keys",
                    f"{who} called {call.operation}, which this exercise never needs; touch only {keys_hint}",
                    order,
                    res,
                )
            )
        for other in _tables(call):
            if other != table:
                raise Stop(
                    Finding(
                        "outside-keys",
                        f"{who}'s {call.operation} wrote to table {other!r}, not the table it was given",
                        order,
                        res,
                    )
                )
        for pk, sk in _write_keys(call):
            if not allowed(pk, sk):
                raise Stop(
                    Finding(
                        "outside-keys",
                        f"{who}'s {call.operation} wrote "
                        f"PK={pk!r}, SK={sk!r}, outside this exercise's keys: "
                        f"touch only {keys_hint}",
                        order,
                        res,
                    )
                )


def check_raised(out: Outcome, documented: tuple[type[Exception], ...], res: Interleaving | None = None) -> None:
    """A stub is 'not solved yet'; an error that is not documented fails with its last line."""
    exc = out.exc
    if exc is None or isinstance(exc, documented):
        return
    if isinstance(exc, NotImplementedError):
        raise Stop(
            Finding(
                NOT_SOLVED,
                "not solved yet: the solution still raises "
                "NotImplementedError. Replace `raise NotImplementedError` with your "
                "code, then run the check again",
            )
        )
    allowed = " or ".join(e.__name__ for e in documented)
    rule = (
        f"the only errors this exercise may raise are {allowed}"
        if allowed
        else "this exercise's function must not raise"
    )
    raise Stop(
        Finding(
            "error",
            f"{person(out.actor)}'s call {call_text(out.args)} raised {last_line(exc)} — {rule}",
            res.label if res is not None else None,
            res,
        )
    )


def _s(av: Any) -> str:
    if isinstance(av, Mapping) and len(av) == 1:
        return str(next(iter(av.values())))
    return str(av)


def _tables(call: RecordedCall) -> list[str]:
    p = call.params
    if call.operation == Op.TRANSACT_WRITE_ITEMS:
        return [str(body.get("TableName")) for _, body in call.actions()]
    if call.operation == Op.BATCH_WRITE_ITEM:
        return [str(t) for t in (p.get("RequestItems") or {})]
    if call.is_write:
        return [str(p.get("TableName"))]
    return []


def _write_keys(call: RecordedCall) -> list[tuple[str, str]]:
    keys: list[Mapping[str, Any]] = []
    for _, body in call.actions():
        found = body.get("Key") or body.get("Item")
        if isinstance(found, Mapping):
            keys.append(found)
    if call.operation == Op.BATCH_WRITE_ITEM:
        for requests in (call.params.get("RequestItems") or {}).values():
            for r in requests:
                for body in r.values():
                    found = body.get("Key") or body.get("Item")
                    if isinstance(found, Mapping):
                        keys.append(found)
    return [(_s(k.get("PK")), _s(k.get("SK"))) for k in keys]


__all__ = ["check_calls", "check_raised", "signature_problem"]
