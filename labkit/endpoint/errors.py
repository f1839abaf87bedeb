"""The engine's errors: how every stage says "this request is the client's mistake (or a refusal)".

A :class:`ClientFault` raised anywhere in the pipeline is the answer — ``status`` and
``{"__type": code, "message": ...}`` (:func:`labkit.endpoint.wire.encode.fault_response`) — and
nothing is written; it never becomes a 500. :func:`cancelled` builds the one fault with a
per-action body, TransactionCanceledException. (labkit's own error tree, for labkit's users, is
:mod:`labkit.shared.errors`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ClientFault(Exception):
    """A request DynamoDB would refuse: answered with ``status`` and ``{"__type": code, "message": ...}``."""

    def __init__(self, code: str, message: str, status: int = 400, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.extra = dict(extra or {})


def invalid(message: str) -> ClientFault:
    """A ValidationException with DynamoDB's ``message``."""
    return ClientFault("ValidationException", message)


def cancelled(reasons: list[tuple[str | None, str | None, Any]]) -> ClientFault:
    """TransactionCanceledException with one reason per action, in request order: (code, message, item)."""
    codes = ", ".join(code or "None" for code, _, _ in reasons)
    entries = []
    for code, message, item in reasons:
        entry: dict[str, Any] = {"Code": code, "Message": message} if code else {"Code": "None"}
        if item:
            entry["Item"] = item
        entries.append(entry)
    return ClientFault(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        extra={"CancellationReasons": entries},
    )


__all__ = ["ClientFault", "cancelled", "invalid"]
