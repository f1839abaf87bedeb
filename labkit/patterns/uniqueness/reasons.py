"""Reading DynamoDB's answer: each cancellation reason named after the field or item it points at.

Only what a uniqueness transaction can say more precisely is decided here (a taken value, a
stale account); everything else falls back to the one mapping point, :mod:`labkit.shared._errors_map`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from botocore.exceptions import ClientError

from ...shared._errors_map import from_client_error, map_errors
from ...shared.errors import (
    LabkitError,
    StaleAccount,
    TransactionCancelled,
    ValueTaken,
    cancellation_reasons,
    error_code,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef


@dataclass(frozen=True)
class Slot:
    """What one action of a transaction means, so its cancellation reason can be named.

    ``role``: ``create`` (the account's own Put), ``claim`` (a marker Put: failing means the value
    is taken), ``release`` / ``guard`` / ``check`` (a condition that no longer holds: stale).
    ``what`` names the item in messages; ``field`` and ``value`` name a claimed value.
    """

    role: Literal["create", "claim", "release", "guard", "check"]
    what: str
    field: str = ""
    value: str = ""


def _named(exc: ClientError, slots: Sequence[Slot], what: str) -> LabkitError | None:
    """The precise error for a cancelled uniqueness transaction, or None to use the general mapping."""
    if error_code(exc) != "TransactionCanceledException":
        return None
    reasons = cancellation_reasons(exc)
    codes = [str(r.get("Code", "None")) for r in reasons]
    if "TransactionConflict" in codes:
        return None  # the general mapping says TransactionConflict: retry
    named = list(zip(slots, reasons, strict=False))
    invalid = [(s, r) for s, r in named if r.get("Code") == "ValidationError"]
    if invalid:
        slot, reason = invalid[0]
        return TransactionCancelled(
            f"DynamoDB rejected {slot.what} as invalid ({reason.get('Message', '')}); "
            "nothing was written — fix the input",
            reasons,
        )
    failed = [s for s, r in named if r.get("Code") == "ConditionalCheckFailed"]
    created = [s for s in failed if s.role == "create"]
    if created:
        return StaleAccount(
            f"{created[0].what} already exists: this registration was probably applied "
            "already (resent after the 10-minute token window?); read the account instead "
            "of registering again",
            reasons,
        )
    guards = [s for s in failed if s.role in ("release", "guard", "check")]
    if guards:
        return StaleAccount(
            f"{what} cancelled: {'; '.join(s.what for s in guards)} no longer holds; nothing "
            "was written — re-read the account and retry (run audit() if a marker is missing)",
            reasons,
        )
    claims = {s.field: s.value for s in failed if s.role == "claim"}
    if claims:
        return ValueTaken(claims, reasons)
    return None


def translate_error(exc: ClientError, slots: Sequence[Slot], what: str) -> LabkitError:
    """Map a failed call to labkit's error tree, naming the field or item each reason points at."""
    return _named(exc, slots, what) or from_client_error(exc, what)


def named_errors(what: str, table: str | None = None, slots: Sequence[Slot] = ()) -> AbstractContextManager[None]:
    """:func:`~labkit.shared._errors_map.map_errors`, naming cancellation reasons after ``slots``."""
    return map_errors(what, table, translate=lambda exc: _named(exc, slots, what))


def transact(client: DynamoDBClient, actions: list[dict[str, Any]], slots: list[Slot], token: str, what: str) -> None:
    """Send one TransactWriteItems with ``token``; a failure is raised named after ``slots``.

    ``actions[i]`` is described by ``slots[i]``; this is the only place the uniqueness pattern
    sends a write transaction.
    """
    with named_errors(what, None, slots):
        items = cast("list[TransactWriteItemTypeDef]", actions)
        client.transact_write_items(TransactItems=items, ClientRequestToken=token)


__all__ = ["Slot", "named_errors", "transact", "translate_error"]
