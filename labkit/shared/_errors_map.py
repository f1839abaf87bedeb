"""The ONE place where botocore's errors become labkit's (see the tree in :mod:`labkit.shared.errors`).

Every module wraps its DynamoDB calls in :func:`map_errors`::

    with map_errors(Op.GET_ITEM, table):
        client.get_item(...)

A ``ClientError`` becomes a :class:`~labkit.shared.errors.DynamoError` subclass (or
:class:`~labkit.shared.errors.TableError` for a missing table), a ``BotoCoreError`` becomes
:class:`~labkit.shared.errors.BackendUnavailable` (never sent), :class:`~labkit.shared.errors.OutcomeUnknown`
(sent, no answer) or :class:`~labkit.shared.errors.ConfigurationError`; the original is ``__cause__``.
A module that can say more about a ClientError (e.g. which unique field a cancellation
reason points at) passes ``translate``; what it returns None for falls back to this table.
labkit's own errors pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from botocore import exceptions as bce

from .constants import MAX_ITEM_BYTES
from .errors import (
    BackendUnavailable,
    ConfigurationError,
    ConflictError,
    ConnectionClosedError,
    DynamoError,
    IdempotencyMismatch,
    ItemTooLarge,
    LabkitError,
    OutcomeUnknown,
    ReadTimeoutError,
    TableError,
    Throttled,
    TransactionCancelled,
    TransactionConflict,
    ValidationError,
    cancellation_reasons,
    error_code,
)

Translate = Callable[[bce.ClientError], LabkitError | None]

#: DynamoDB error codes that mean "slow down" (labkit maps them to Throttled).
THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})


def _where(action: str, table: str | None) -> str:
    return f"{action} on {table!r}" if table else action


def from_client_error(exc: bce.ClientError, action: str, table: str | None = None) -> LabkitError:
    """labkit's error for a DynamoDB error answer."""
    code = error_code(exc)
    message = str(exc.response.get("Error", {}).get("Message", ""))
    where = _where(action, table)
    if code == "ResourceNotFoundException":
        name = repr(table) if table else "the table"
        return TableError(
            f"table {name} does not exist; nothing was written. Create it with "
            "labkit.ensure_table(conn) or run setup_lab(...) first."
        )
    if code == "ConditionalCheckFailedException":
        return ConflictError(f"{where}: the condition failed; re-read and retry", code)
    if code == "TransactionCanceledException":
        reasons = cancellation_reasons(exc)
        codes = ", ".join(str(r.get("Code", "None")) for r in reasons) or message
        if any(r.get("Code") == "TransactionConflict" for r in reasons):
            return TransactionConflict(
                f"{where} collided with another transaction on the same items ({codes}); "
                "nothing was written — retry (resending with the same token is safe)",
                reasons,
            )
        return TransactionCancelled(f"{where} was cancelled ({codes}); nothing was written", reasons)
    if code == "TransactionConflictException":
        return ConflictError(f"{where}: a transaction holds this item right now; nothing was written — retry", code)
    if code == "IdempotentParameterMismatchException":
        return IdempotencyMismatch(
            f"{action}: this ClientRequestToken was used in the last 10 minutes for a different "
            "request; use a new token for a new request, or resend the original request unchanged"
        )
    if code == "TransactionInProgressException":
        return ConflictError(
            f"{action}: the first request with this ClientRequestToken is still running; "
            "wait for it, then resend the same request",
            code,
        )
    if code == "ValidationException" and "size" in message.lower() and "exceeded" in message.lower():
        return ItemTooLarge(0, MAX_ITEM_BYTES, refused=message)
    if code in THROTTLING_CODES:
        return Throttled(f"{where} was throttled ({code}); nothing was written — back off and retry", code)
    return DynamoError(f"{where} failed: {code}: {message}", code)


def from_botocore_error(exc: bce.BotoCoreError, action: str, table: str | None = None) -> LabkitError:
    """labkit's error for a request that got no DynamoDB answer (or was never sent)."""
    where = _where(action, table)
    unknown = (
        f"{where}: no answer from DynamoDB ({exc}); the request MAY have been applied. Resend the "
        "same request (labkit's writes are safe to retry) or read the item to see"
    )
    if isinstance(exc, bce.ConnectionClosedError):
        return ConnectionClosedError(unknown)
    if isinstance(exc, bce.ReadTimeoutError):
        return ReadTimeoutError(unknown)
    if isinstance(exc, bce.NoCredentialsError | bce.NoRegionError | bce.PartialCredentialsError):
        return ConfigurationError(f"{where}: {exc}; set credentials and a region (labkit.connect() does)")
    if isinstance(exc, bce.ParamValidationError):
        return ValidationError(f"{where}: botocore rejected the request before sending it: {exc}")
    if isinstance(exc, bce.ConnectionError):  # EndpointConnectionError, ConnectTimeoutError, proxy errors
        return BackendUnavailable(
            f"{where} did not reach DynamoDB ({exc}); nothing was written. "
            "Check that the backend is running (labkit.connect() says which one)."
        )
    if isinstance(exc, bce.HTTPClientError):
        return OutcomeUnknown(unknown)
    return BackendUnavailable(f"{where} failed before DynamoDB answered ({exc}); check the backend")


@contextmanager
def map_errors(action: str, table: str | None = None, *, translate: Translate | None = None) -> Iterator[None]:
    """Turn botocore errors raised inside the block into labkit's tree (original as ``__cause__``)."""
    try:
        yield
    except bce.ClientError as exc:
        mapped = translate(exc) if translate is not None else None
        raise (mapped or from_client_error(exc, action, table)) from exc
    except bce.BotoCoreError as exc:
        raise from_botocore_error(exc, action, table) from exc
