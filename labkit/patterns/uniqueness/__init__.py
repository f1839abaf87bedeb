"""Uniqueness across several attributes: one marker item per unique value, in one transaction.

DynamoDB enforces uniqueness on the primary key only. So every unique value becomes the
key of its own marker item, written in the same TransactWriteItems as the record, each Put
guarded by ``attribute_not_exists(PK)``: a taken value is a key collision the engine
refuses, and the whole sign-up is cancelled — no half account, no stray marker.

Items (one table, string ``PK`` + ``SK``)::

    PK                            SK       attributes
    ACCT#<id>                     PROFILE  id, email, username, ...
    UNIQ#EMAIL#ada@lovelace.io    LOCK     owner=<id>, field="email", value="ada@lovelace.io"
    UNIQ#HANDLE#ada               LOCK     owner=<id>, field="username", value="ada"

:class:`UniqueRegistry` holds client, table and fields, like the singleton's ``FlagStore``
(``.connect(conn)``, ``.with_client(client)`` for a race actor); the free functions it wraps
take a botocore client and a table name. :func:`register_check_then_write` is the anti-pattern
the lesson breaks on purpose; never use it for real.

Modules: ``keys``, ``normalise`` (and the look-alike policy), ``reasons`` (naming a cancelled
transaction's reasons), ``registry`` (sign-up), ``lifecycle`` (change, delete), ``resend`` (pinned-token
retries), ``store``
(:class:`UniqueRegistry`), ``checks`` (invariants on the table), ``audit`` (audit and repair),
``inspect`` (DataFrames), ``antipatterns``, ``lost_response`` (lose an answer on purpose).
"""

from __future__ import annotations

from ...shared.errors import cancellation_reasons
from .antipatterns import (
    SEED_TRANSACTION_JSON,
    email_in_use,
    register_check_then_write,
    seed_transaction,
    send_seed_transaction,
)
from .audit import AuditReport, RepairReport, audit, repair
from .inspect import account_items, table_items
from .keys import (
    DEFAULT_FIELDS,
    RESERVED_ATTRIBUTES,
    FieldSpec,
    account_key,
    check_fields,
    check_token,
    join_parts,
    marker_item,
    marker_key,
    split_parts,
)
from .lifecycle import change_email, change_username, change_value, delete_account, get_account
from .lost_response import lose_next_response
from .normalise import normalise, normalise_email, normalise_username, normalise_value
from .reasons import translate_error
from .registry import Registration, prepare_registration, register, submit, taken_values
from .store import UniqueRegistry

__all__ = [
    "AuditReport",
    "DEFAULT_FIELDS",
    "FieldSpec",
    "RESERVED_ATTRIBUTES",
    "Registration",
    "RepairReport",
    "SEED_TRANSACTION_JSON",
    "UniqueRegistry",
    "account_items",
    "account_key",
    "audit",
    "cancellation_reasons",
    "change_email",
    "change_username",
    "change_value",
    "check_fields",
    "check_token",
    "delete_account",
    "email_in_use",
    "get_account",
    "join_parts",
    "lose_next_response",
    "marker_item",
    "marker_key",
    "normalise",
    "normalise_email",
    "normalise_username",
    "normalise_value",
    "prepare_registration",
    "register",
    "register_check_then_write",
    "repair",
    "seed_transaction",
    "send_seed_transaction",
    "split_parts",
    "submit",
    "table_items",
    "taken_values",
    "translate_error",
]
