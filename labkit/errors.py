"""Every error labkit raises, in one tree.

::

    LabkitError
    ├── ConfigurationError          bad backend name, bad argument, missing region
    ├── BackendUnavailable          an endpoint that does not answer, a port in use
    ├── TableError                  a table that is missing, or that labkit did not create
    ├── ValidationError             bad input caught before anything was written
    │   ├── UnknownFlag             a flag name the settings item does not declare
    │   ├── FlagTypeError           a flag value of the wrong type
    │   └── ItemTooLarge            an item over DynamoDB's 400 KB limit
    ├── DynamoError                 a DynamoDB call failed; wraps the botocore ClientError
    │   ├── ConflictError           a condition or transaction conflict: re-read and retry
    │   │   ├── RetriesExhausted    ... and the bounded retries ran out
    │   │   └── TransactionConflict ... that cancelled a transaction (also a TransactionCancelled)
    │   ├── TransactionCancelled    TransactionCanceledException with its reasons, in request order
    │   │   └── ValueTaken          a unique value already belongs to someone else
    │   └── IdempotencyMismatch     a ClientRequestToken reused for a different request
    ├── NotFound                    the item an operation needs does not exist
    └── RaceError                   a forced interleaving that cannot be followed

Warnings (``warnings.warn``; not errors, nothing is refused)::

    UserWarning
    └── LabkitWarning
        └── ItemSizeWarning         a write makes an item cost more read units (past a 4 KB step)

Each error's message says what was wrong and what to do next. A DynamoDB
failure keeps the botocore ``ClientError`` as ``__cause__`` and exposes its
error ``code``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any


class LabkitError(Exception):
    """Base of every labkit error."""


class ConfigurationError(LabkitError):
    """A setting or argument labkit cannot use (unknown backend, missing region, ...)."""


class BackendUnavailable(LabkitError):
    """The chosen backend cannot be reached or started."""


class TableError(LabkitError):
    """The lab table is missing, or is not one labkit may touch."""


class ValidationError(LabkitError, ValueError):
    """Input rejected before anything was sent to DynamoDB; nothing was written."""


class UnknownFlag(ValidationError, KeyError):
    """A flag name that the settings item does not declare."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown flag {name!r}; declared flags are: {', '.join(sorted(self.known))}. "
            "Declare it in the Flags schema first."
        )

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class FlagTypeError(ValidationError, TypeError):
    """A flag value whose type does not match the flag's declaration."""


class ItemTooLarge(ValidationError):
    """An item larger than DynamoDB's 400 KB item limit."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"item would be {size:,} bytes, over DynamoDB's {limit:,}-byte item limit; "
            "nothing was written. Move large values to S3 and store a pointer."
        )


class DynamoError(LabkitError):
    """A DynamoDB call failed. ``code`` is DynamoDB's error code; ``__cause__`` the ClientError."""

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class ConflictError(DynamoError):
    """Someone else changed the item first (ConditionalCheckFailed, TransactionConflict)."""


class RetriesExhausted(ConflictError):
    """A conditional write kept losing to concurrent writers until the retry budget ran out."""

    def __init__(self, message: str, attempts: int, code: str = "ConditionalCheckFailedException") -> None:
        super().__init__(message, code)
        self.attempts = attempts


class TransactionCancelled(DynamoError):
    """TransactionCanceledException, with DynamoDB's CancellationReasons in request order."""

    def __init__(
        self,
        message: str,
        reasons: Sequence[Mapping[str, Any]],
        code: str = "TransactionCanceledException",
    ) -> None:
        super().__init__(message, code)
        self.reasons: tuple[Mapping[str, Any], ...] = tuple(reasons)

    @property
    def reason_codes(self) -> tuple[str, ...]:
        """Each action's reason code in request order ("None" for actions that were fine)."""
        return tuple(str(r.get("Code", "None")) for r in self.reasons)


class ValueTaken(TransactionCancelled):
    """One or more unique values already belong to another record.

    ``fields`` maps each taken field to its (normalised) value, e.g. ``{"email": "ada@lovelace.io"}``.
    """

    def __init__(
        self,
        fields: Mapping[str, str],
        reasons: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.fields = dict(fields)
        taken = ", ".join(f"{f} {v!r}" for f, v in self.fields.items())
        super().__init__(
            f"already taken: {taken}; choose another value (nothing was written)",
            reasons,
        )

    @property
    def field(self) -> str:
        """The first taken field (convenience when only one collided)."""
        return next(iter(self.fields))

    @property
    def value(self) -> str:
        return self.fields[self.field]


class TransactionConflict(ConflictError, TransactionCancelled):
    """A transaction cancelled because its items changed under it (a guard failed, or
    TransactionConflict): re-read and retry. ``reasons`` are DynamoDB's, in request order."""


class IdempotencyMismatch(DynamoError):
    """The ClientRequestToken was already used, within 10 minutes, for a different request."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "IdempotentParameterMismatchException")


class NotFound(LabkitError, LookupError):
    """The item an operation works on (e.g. an account) does not exist."""


class RaceError(LabkitError):
    """A forced interleaving could not be followed (an actor ended early, raised, or stalled)."""


class LabkitWarning(UserWarning):
    """Base of every warning labkit issues."""


class ItemSizeWarning(LabkitWarning):
    """A write grows an item past a 4 KB read-unit step: every read of it now costs more."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


# ---------------------------------------------------------------- reading botocore errors

_REASONS_IN_MESSAGE = re.compile(r"\[([^\]]*)\]\s*$")


def error_code(exc: BaseException) -> str:
    """DynamoDB's error code of a botocore ClientError or a labkit DynamoError; else the type's name."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
    if isinstance(exc, DynamoError) and exc.code:
        return exc.code
    return type(exc).__name__


def cancellation_reasons(exc: BaseException) -> list[dict[str, Any]]:
    """A cancelled transaction's CancellationReasons, one per action in request order.

    botocore puts them in ``exc.response["CancellationReasons"]``; some endpoints only list
    the codes at the end of the message (``... [None, ConditionalCheckFailed]``), so that is read too.
    """
    response = getattr(exc, "response", None)
    if not isinstance(response, Mapping):
        return [dict(r) for r in getattr(exc, "reasons", ())]
    reasons = response.get("CancellationReasons")
    if reasons:
        return [dict(r) for r in reasons]
    match = _REASONS_IN_MESSAGE.search(str(response.get("Error", {}).get("Message", "")))
    if not match:
        return []
    return [{"Code": code.strip()} for code in match.group(1).split(",")]

__all__ = [
    "BackendUnavailable",
    "ConfigurationError",
    "ConflictError",
    "DynamoError",
    "FlagTypeError",
    "IdempotencyMismatch",
    "ItemSizeWarning",
    "ItemTooLarge",
    "LabkitError",
    "LabkitWarning",
    "NotFound",
    "RaceError",
    "RetriesExhausted",
    "TableError",
    "TransactionCancelled",
    "TransactionConflict",
    "UnknownFlag",
    "ValidationError",
    "ValueTaken",
    "cancellation_reasons",
    "error_code",
]
