"""DynamoDB's error answers: the exact answer DynamoDB gives an operation for each error.

One set of answers serves both fault levels: the race lab's canned responses
(:mod:`labkit.engine_plugins.faults.race`) and the endpoint's fault injector
(:mod:`labkit.engine_plugins.faults.injector`).
Client side: imports the floor only (the answer type is :class:`labkit.shared.engine_hooks.Rejection`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...shared import constants as C
from ...shared._errors_map import THROTTLING_CODES
from ...shared.catalogue import CONFLICTABLE as CONFLICTS
from ...shared.catalogue import DATA_PLANE_ORDER, TRANSACTIONS
from ...shared.engine_hooks import Rejection
from ...shared.errors import ValidationError

#: Every error a fault may name -> (HTTP status, DynamoDB's message). "TransactionConflict"
#: takes the shape the operation gets from DynamoDB (see :func:`rejection`).
ERRORS: dict[str, tuple[int, str]] = {
    "ProvisionedThroughputExceededException": (400, C.PROVISIONED_THROUGHPUT_EXCEEDED_MESSAGE),
    "ThrottlingException": (400, "Rate of requests exceeds the allowed throughput."),
    "RequestLimitExceeded": (
        400,
        "Throughput exceeds the current throughput limit for your account. "
        "Please contact AWS Support at https://aws.amazon.com/support request a limit increase",
    ),
    "InternalServerError": (500, "Internal server error"),
    "ServiceUnavailable": (503, "The service is currently unavailable or busy."),
    "TransactionConflict": (400, "Transaction is ongoing for the item"),
}
#: DynamoDB's message for a single-item write that meets a transaction in flight.
CONFLICT_EXCEPTION_MESSAGE = "Operation was rejected because there is an ongoing transaction for the item."
#: Data-plane operations a rule may name ("*" matches them all).
OPERATIONS = DATA_PLANE_ORDER
#: Data-plane operations DynamoDB can refuse with a transaction conflict (the catalogue's ``conflicts``;
#: PartiQL can meet one too, but its statements reach faults as the data-plane requests they become).
CONFLICTABLE = tuple(op for op in DATA_PLANE_ORDER if op in CONFLICTS)
#: Errors that mean "slow down" (labkit maps them all to Throttled, in labkit.shared._errors_map).
THROTTLES = tuple(sorted(THROTTLING_CODES, key=list(ERRORS).index))
#: The error code the endpoint answers the prepare of a held transaction with (labkit-only).
HELD = "LabkitTransactionHeld"


def did_you_mean(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _actions(params: Mapping[str, Any]) -> int:
    return len(params.get("TransactItems") or [])


def cancelled(reasons: Sequence[Mapping[str, Any]]) -> Rejection:
    """DynamoDB's TransactionCanceledException for these CancellationReasons (request order)."""
    codes = ", ".join(str(r.get("Code", "None")) for r in reasons)
    return Rejection(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        400,
        {"CancellationReasons": [dict(r) for r in reasons]},
    )


def conflict_reasons(actions: int, conflicting: Sequence[int]) -> list[dict[str, str]]:
    """``TransactionConflict`` at the conflicting actions, ``None`` at the others."""
    return [
        {"Code": "TransactionConflict", "Message": ERRORS["TransactionConflict"][1]}
        if i in conflicting
        else {"Code": "None"}
        for i in range(actions)
    ]


def rejection(
    error: str, operation: str, params: Mapping[str, Any], *, item: int = 0, apply_first: bool = False
) -> Rejection:
    """The answer DynamoDB gives ``operation`` for ``error``, in DynamoDB's exact shape.

    ``TransactionConflict``: a transaction gets ``TransactionCanceledException`` whose
    CancellationReasons hold ``TransactionConflict`` at action ``item`` and ``None`` at the
    others; a single-item write gets ``TransactionConflictException``.
    """
    if error not in ERRORS:
        raise ValidationError(
            f"unknown error {error!r}{did_you_mean(error, list(ERRORS))}; known errors: {', '.join(ERRORS)}"
        )
    status, message = ERRORS[error]
    if error == "TransactionConflict":
        if operation in TRANSACTIONS:
            n = max(_actions(params), item + 1)
            return _replace(cancelled(conflict_reasons(n, [item])), apply_first)
        return Rejection("TransactionConflictException", CONFLICT_EXCEPTION_MESSAGE, 400, apply_first=apply_first)
    return Rejection(error, message, status, apply_first=apply_first)


def _replace(rej: Rejection, apply_first: bool) -> Rejection:
    return Rejection(rej.code, rej.message, rej.status, rej.extra, apply_first)


def error_body(rej: Rejection) -> bytes:
    """The JSON body DynamoDB sends for a rejection."""
    payload = {"__type": C.ERROR_PREFIX + rej.code, "message": rej.message, **rej.extra}
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")
