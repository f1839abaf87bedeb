"""Anti-patterns kept on purpose: check-then-write, and the article's transaction as written."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Final, Literal

from ...shared import constants as C
from ...shared.codec import to_wire
from ...shared.errors import (
    ValidationError,
    ValueTaken,
)
from .keys import account_key, check_account_id
from .normalise import normalise_email, normalise_value
from .reasons import Slot, named_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def email_in_use(client: DynamoDBClient, table: str, email: str, *, read: Literal["index", "scan"] = "index") -> bool:
    """Whether an account has this email: Query the GSI (eventually consistent), or Scan."""
    value = normalise_email(email)
    with named_errors(f"looking up email {value!r}", table):
        if read == "index":
            out = client.query(
                TableName=table,
                IndexName=C.EMAIL_INDEX_NAME,
                KeyConditionExpression="email = :e",
                ExpressionAttributeValues={":e": {"S": value}},
                Select="COUNT",
            )
            return int(out.get("Count", 0)) > 0
        if read == "scan":
            kwargs: dict[str, Any] = {
                "TableName": table,
                "FilterExpression": "email = :e AND begins_with(PK, :acct)",
                "ExpressionAttributeValues": {":e": {"S": value}, ":acct": {"S": C.ACCOUNT_PREFIX}},
                "ConsistentRead": True,
                "Select": "COUNT",
            }
            while True:
                page = client.scan(**kwargs)
                if int(page.get("Count", 0)) > 0:
                    return True
                if "LastEvaluatedKey" not in page:
                    return False
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    raise ValidationError(f"read must be 'index' or 'scan', not {read!r}")


def register_check_then_write(
    client: DynamoDBClient,
    table: str,
    *,
    email: str,
    username: str,
    read: Literal["index", "scan"] = "index",
    account_id: str | None = None,
) -> str:
    """ANTI-PATTERN (kept for the lesson): check the email is free, then PutItem the account.

    Wrong because the check and the write are two requests: two sign-ups that both read before
    either writes both see "free" and both write — two accounts, one email, and no marker to
    flag it. A strongly consistent read (``read="scan"``) does not close the gap; a GSI read is
    stale besides. Use :func:`register`. Returns the new account id.
    """
    values = {
        "email": normalise_value("email", email, C.EMAIL_NAMESPACE),
        "username": normalise_value("username", username, C.HANDLE_NAMESPACE),
    }
    if read not in ("index", "scan"):
        raise ValidationError(f"read must be 'index' or 'scan', not {read!r}")
    new_id = check_account_id(account_id) if account_id is not None else uuid.uuid4().hex
    if email_in_use(client, table, values["email"], read=read):
        raise ValueTaken({"email": values["email"]})
    item = {**account_key(new_id), "id": new_id, **values}
    with named_errors(f"writing account {new_id}", table):
        client.put_item(TableName=table, Item=to_wire(item))
    return new_id


# --- the seed's transaction, as written ---

#: The article's TransactWriteItems request, verbatim (table "accounts"; its locks carry no owner).
SEED_TRANSACTION_JSON: Final = """\
{
  "TransactItems": [
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "ACCT#a1f9c3"},
          "SK": {"S": "PROFILE"},
          "email": {"S": "ada@lovelace.io"},
          "username": {"S": "ada"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    },
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "UNIQ#EMAIL#ada@lovelace.io"},
          "SK": {"S": "LOCK"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    },
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "UNIQ#HANDLE#ada"},
          "SK": {"S": "LOCK"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    }
  ]
}
"""


def seed_transaction(table: str) -> dict[str, Any]:
    """The article's request with its table name ("accounts") replaced by ``table``."""
    request: dict[str, Any] = json.loads(SEED_TRANSACTION_JSON)
    for action in request["TransactItems"]:
        for body in action.values():
            body["TableName"] = table
    return request


def send_seed_transaction(client: DynamoDBClient, table: str) -> None:
    """Send the article's request as written (no token); a second send is cancelled."""
    slots = [
        Slot("create", "account ACCT#a1f9c3"),
        Slot("claim", "email marker", "email", "ada@lovelace.io"),
        Slot("claim", "username marker", "username", "ada"),
    ]
    with named_errors("sending the article's transaction", table, slots):
        client.transact_write_items(**seed_transaction(table))


__all__ = [
    "SEED_TRANSACTION_JSON",
    "email_in_use",
    "register_check_then_write",
    "seed_transaction",
    "send_seed_transaction",
]
