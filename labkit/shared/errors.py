"""Every error labkit raises, in one tree.

::

    LabkitError
    ├── ConfigurationError          bad backend name, bad argument, missing region or credentials
    ├── BackendUnavailable          the request never reached DynamoDB: nothing was written
    ├── OutcomeUnknown              the request was sent but no answer came back: it MAY have been applied
    │   ├── ConnectionClosedError   ... the connection closed before the answer (a lost response)
    │   └── ReadTimeoutError        ... the answer did not come in time
    ├── TableError                  a table that is missing, or that labkit did not create
    ├── ValidationError             bad input caught before anything was written
    │   ├── UnknownFlag             a flag name the settings item does not declare
    │   ├── FlagTypeError           a flag value of the wrong type
    │   ├── ItemTooLarge            an item over DynamoDB's 400 KB limit
    │   └── LookAlikeValue          a unique value with an invisible/control character or mixed scripts
    ├── DynamoError                 DynamoDB answered with an error; ``code``, ``reasons``, ``__cause__``
    │   ├── ConflictError           someone else changed the item first: re-read and retry
    │   │   ├── RetriesExhausted    ... and the bounded retries ran out
    │   │   ├── StaleAccount        ... a guard on an account or marker no longer holds
    │   │   └── TransactionConflict ... another transaction touched the same items at the same moment
    │   ├── TransactionCancelled    a TransactionCanceledException for another reason, reasons in request order
    │   ├── Throttled               throughput exceeded / throttled: back off and retry
    │   └── IdempotencyMismatch     a ClientRequestToken reused for a different request
    ├── ValueTaken                  a unique value already belongs to someone else (choose another)
    ├── NotFound                    the item an operation needs does not exist
    └── RaceError                   a forced interleaving that cannot be followed

Warnings (``warnings.warn``; not errors, nothing is refused)::

    UserWarning
    └── LabkitWarning
        └── ItemSizeWarning         a write makes an item cost more read units (past a 4 KB step)

Each error's message says what was wrong and what to do next. botocore's errors are
turned into this tree in ONE place, :func:`labkit.shared._errors_map.map_errors`; the original
is kept as ``__cause__``. A DynamoDB failure exposes its error ``code``.

Programmer errors (calling with the wrong Python type, e.g. a FlagSchema of non-Flags) may
raise a plain ``TypeError``; every other failure of a public function is a :class:`LabkitError`.
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

    def __init__(self, size: int, limit: int, refused: str = "") -> None:
        self.size = size
        self.limit = limit
        what = f"DynamoDB refused the item as too large ({refused})" if refused else f"item would be {size:,} bytes"
        super().__init__(
            f"{what}, over DynamoDB's {limit:,}-byte item limit; "
            "nothing was written. Move large values to S3 and store a pointer."
        )


class OutcomeUnknown(LabkitError):
    """The request was sent but no answer came back: DynamoDB MAY have applied it.

    Do not assume nothing was written. Resend the SAME request (same ClientRequestToken,
    same expected version): labkit's writes are safe to retry, so a resend either applies
    once or recognises its own earlier write.
    """


class ConnectionClosedError(OutcomeUnknown):
    """The connection closed before DynamoDB's answer arrived (a lost response)."""


class ReadTimeoutError(OutcomeUnknown):
    """DynamoDB's answer did not arrive within the read timeout."""


class LookAlikeValue(ValidationError):
    """A unique value that could pass for another: an invisible or control character, or a
    label mixing Latin with Cyrillic or Greek. ``field``, ``char`` (the offending character)
    and ``position`` (its index in the value) say where."""

    def __init__(self, message: str, field: str, char: str, position: int) -> None:
        super().__init__(message)
        self.field = field
        self.char = char
        self.position = position


class DynamoError(LabkitError):
    """DynamoDB answered with an error. ``code`` is its error code; ``__cause__`` the ClientError.

    ``reasons`` are a cancelled transaction's CancellationReasons in request order (empty otherwise).
    """

    def __init__(self, message: str, code: str = "", reasons: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.reasons: tuple[Mapping[str, Any], ...] = tuple(reasons)

    @property
    def reason_codes(self) -> tuple[str, ...]:
        """Each action's reason code in request order ("None" for actions that were fine)."""
        return tuple(str(r.get("Code", "None")) for r in self.reasons)


class ConflictError(DynamoError):
    """Someone else changed the item first (ConditionalCheckFailed, TransactionConflict): re-read and retry."""


class RetriesExhausted(ConflictError):
    """A conditional write kept losing to concurrent writers until the retry budget ran out."""

    def __init__(self, message: str, attempts: int, code: str = "ConditionalCheckFailedException") -> None:
        super().__init__(message, code)
        self.attempts = attempts


class StaleAccount(ConflictError):
    """A lifecycle guard failed: the account or a marker changed since it was read. Re-read and retry."""

    def __init__(
        self, message: str, reasons: Sequence[Mapping[str, Any]] = (), code: str = "TransactionCanceledException"
    ) -> None:
        super().__init__(message, code, reasons)


class TransactionConflict(ConflictError):
    """A transaction cancelled because another request touched its items at the same moment
    (reason ``TransactionConflict``): retry. ``reasons`` are DynamoDB's, in request order."""

    def __init__(
        self, message: str, reasons: Sequence[Mapping[str, Any]] = (), code: str = "TransactionCanceledException"
    ) -> None:
        super().__init__(message, code, reasons)


class TransactionCancelled(DynamoError):
    """TransactionCanceledException, with DynamoDB's CancellationReasons in request order."""

    def __init__(
        self,
        message: str,
        reasons: Sequence[Mapping[str, Any]],
        code: str = "TransactionCanceledException",
    ) -> None:
        super().__init__(message, code, reasons)


class Throttled(DynamoError):
    """DynamoDB refused the request for throughput (ProvisionedThroughputExceeded, Throttling): back off."""


class IdempotencyMismatch(DynamoError):
    """The ClientRequestToken was already used, within 10 minutes, for a different request."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "IdempotentParameterMismatchException")


class ValueTaken(LabkitError):
    """One or more unique values already belong to another record; nothing was written.

    ``fields`` maps each taken field to its (normalised) value, e.g. ``{"email": "ada@lovelace.io"}``.
    ``reasons`` are the cancelled transaction's reasons when DynamoDB said so (empty when a
    read found the value taken and no transaction was sent); ``code`` is then
    ``TransactionCanceledException``, else ``""``.
    """

    def __init__(
        self,
        fields: Mapping[str, str],
        reasons: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.fields = dict(fields)
        self.reasons: tuple[Mapping[str, Any], ...] = tuple(reasons)
        self.code = "TransactionCanceledException" if self.reasons else ""
        taken = ", ".join(f"{f} {v!r}" for f, v in self.fields.items())
        super().__init__(f"already taken: {taken}; nothing was written. Choose another value.")

    @property
    def reason_codes(self) -> tuple[str, ...]:
        """Each action's reason code in request order (empty when no transaction was sent)."""
        return tuple(str(r.get("Code", "None")) for r in self.reasons)

    @property
    def field(self) -> str:
        """The first taken field (convenience when only one collided)."""
        return next(iter(self.fields))

    @property
    def value(self) -> str:
        return self.fields[self.field]


class NotFound(LabkitError, LookupError):
    """The item an operation works on (e.g. an account) does not exist."""


class RaceError(LabkitError):
    """A forced interleaving could not be followed (an actor ended early, raised, or stalled)."""


#: The errors a race actor may end with as an *outcome* of the race (not a broken actor):
#: DynamoDB said no, a unique value was taken, or the answer was lost.
OUTCOME_ERRORS: tuple[type[LabkitError], ...] = (DynamoError, ValueTaken, OutcomeUnknown)


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
    code = getattr(exc, "code", "")
    if isinstance(exc, LabkitError) and isinstance(code, str) and code:
        return code
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
    "ConnectionClosedError",
    "DynamoError",
    "FlagTypeError",
    "IdempotencyMismatch",
    "ItemSizeWarning",
    "ItemTooLarge",
    "LabkitError",
    "LabkitWarning",
    "LookAlikeValue",
    "NotFound",
    "OUTCOME_ERRORS",
    "OutcomeUnknown",
    "RaceError",
    "ReadTimeoutError",
    "RetriesExhausted",
    "StaleAccount",
    "TableError",
    "Throttled",
    "TransactionCancelled",
    "TransactionConflict",
    "UnknownFlag",
    "ValidationError",
    "ValueTaken",
    "cancellation_reasons",
    "error_code",
]
