"""Which unique value was taken: a cancelled transaction's CancellationReasons, mapped to fields.

``TransactionCanceledException`` carries ``CancellationReasons``: one entry per action, **in
request order, counted from 0** (the first action is slot 0). An action that passed has the code
``"None"`` — a string, not Python's None. ``ConditionalCheckFailed`` at a marker's slot means its
value is taken; ``TransactionConflict`` means another request touched that item at the same moment
(retry: ``conflicts.py``); ``ValidationError`` and the like are bugs in the request. Each
transaction has its own slots: pass its mapping (``SIGN_UP_FIELDS``, ``CHANGE_EMAIL_FIELDS``).
"""

from __future__ import annotations

from collections.abc import Mapping

from botocore.exceptions import ClientError

#: The sign-up transaction's slots (``uniqueness.register_request``): 0 is the account.
SIGN_UP_FIELDS = {1: "email", 2: "username"}
#: The change transaction's (``uniqueness.change_email_request``): 0 is the new email's marker; a
#: refusal at 1 (the old marker) or 2 (the account) means the account changed since it was read.
CHANGE_EMAIL_FIELDS = {0: "email"}


class ValueTaken(Exception):
    def __init__(self, fields: list[str]) -> None:
        super().__init__(f"already taken: {', '.join(fields)}")
        self.fields = fields


def reason_codes(exc: ClientError) -> list[str]:
    """One code per action, in request order; "None" for an action that passed."""
    return [reason.get("Code", "None") for reason in exc.response.get("CancellationReasons", [])]


def taken_fields(exc: ClientError, fields: Mapping[int, str] = SIGN_UP_FIELDS) -> list[str]:
    """The fields whose marker's condition failed, in slot order."""
    codes = reason_codes(exc)
    return [
        field for slot, field in sorted(fields.items()) if slot < len(codes) and codes[slot] == "ConditionalCheckFailed"
    ]


def raise_taken(exc: ClientError, fields: Mapping[int, str] = SIGN_UP_FIELDS) -> None:
    """Raise ValueTaken (the ClientError as its cause) if a marker's value was taken; else return."""
    taken = taken_fields(exc, fields)
    if taken:
        raise ValueTaken(taken) from exc
