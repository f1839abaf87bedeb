"""Reference solutions, one per exercise: what ``labkit exercises`` and the checker's tests run.

Each function is written the way a learner would write it in a notebook cell: plain boto3 client
calls with DynamoDB's typed JSON, and labkit only for the key helpers, normalisation and errors.
Each exercise's source ``lessons/exercises/NN_name.md`` holds a copy of its function, the body between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` (a test keeps the two equal); ``labkit exercises``
checks these on this machine.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from typing import Any

from labkit.patterns.uniqueness import account_key, marker_key, normalise_email, normalise_username
from labkit.shared.errors import NotFound, RetriesExhausted, TransactionConflict, ValueTaken

SETTINGS_KEY = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}


def raise_limit(client: Any, table_name: str, by: int) -> None:
    for attempt in range(1, 6):  # read, then write only if nobody changed the item since; at most 5 times
        item = client.get_item(TableName=table_name, Key=SETTINGS_KEY, ConsistentRead=True)["Item"]
        read_version = item["version"]["N"]
        new_limit = int(item["rate_limit_per_minute"]["N"]) + by
        try:
            client.update_item(
                TableName=table_name,
                Key=SETTINGS_KEY,
                UpdateExpression="SET rate_limit_per_minute = :new, #v = #v + :one",
                ConditionExpression="#v = :read",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={
                    ":new": {"N": str(new_limit)},
                    ":one": {"N": "1"},
                    ":read": {"N": read_version},
                },
            )
            return
        except client.exceptions.ConditionalCheckFailedException:
            time.sleep(random.uniform(0, 0.01 * 2**attempt))  # someone changed it first: back off, read again
    raise RetriesExhausted("the limit changed before each of 5 attempts; nothing of this change was written", 5)


def typed(item: dict[str, str]) -> dict[str, Any]:
    """{'PK': 'ACCT#1'} -> {'PK': {'S': 'ACCT#1'}}: DynamoDB's typed JSON for string attributes."""
    return {name: {"S": value} for name, value in item.items()}


def sign_up(client: Any, table_name: str, email: str, username: str) -> str:
    email, username = normalise_email(email), normalise_username(username)  # ValidationError if bad
    account_id = uuid.uuid4().hex
    account = {**account_key(account_id), "id": account_id, "email": email, "username": username}
    markers = [
        {**marker_key("EMAIL", email), "owner": account_id, "field": "email", "value": email},
        {**marker_key("HANDLE", username), "owner": account_id, "field": "username", "value": username},
    ]
    new = "attribute_not_exists(PK)"  # each Put fails if that key already exists
    puts = [
        {"Put": {"TableName": table_name, "Item": typed(item), "ConditionExpression": new}}
        for item in [account, *markers]
    ]
    request = {"TransactItems": puts, "ClientRequestToken": str(uuid.uuid4())}  # a resend is the same request
    for _ in range(3):
        try:
            client.transact_write_items(**request)
            return account_id
        except client.exceptions.TransactionCanceledException as exc:
            reasons = exc.response["CancellationReasons"]  # one per action, in request order
            if any(reason.get("Code") == "TransactionConflict" for reason in reasons):
                continue  # another request touched one of these items at that moment; nothing written: resend
            taken = {
                field: value
                for field, value, reason in zip(["email", "username"], [email, username], reasons[1:], strict=True)
                if reason.get("Code") == "ConditionalCheckFailed"
            }
            raise ValueTaken(taken or {"email": email, "username": username}) from exc
    raise TransactionConflict("3 sends met a conflict; nothing was written", reasons)


def change_email(client: Any, table_name: str, account_id: str, new_email: str) -> None:
    new_email = normalise_email(new_email)
    for _ in range(5):
        account = client.get_item(TableName=table_name, Key=typed(account_key(account_id)), ConsistentRead=True)
        if "Item" not in account:
            raise NotFound(f"no account {account_id!r}; nothing was written")
        old_email = account["Item"]["email"]["S"]
        if old_email == new_email:
            return
        try:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {  # only if the account still has the email we read
                            "TableName": table_name,
                            "Key": typed(account_key(account_id)),
                            "UpdateExpression": "SET email = :new",
                            "ConditionExpression": "email = :old",
                            "ExpressionAttributeValues": {":new": {"S": new_email}, ":old": {"S": old_email}},
                        }
                    },
                    {
                        "Put": {  # the new email's marker, only if nobody holds it
                            "TableName": table_name,
                            "Item": typed(
                                {
                                    **marker_key("EMAIL", new_email),
                                    "owner": account_id,
                                    "field": "email",
                                    "value": new_email,
                                }
                            ),
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    },
                    {
                        "Delete": {  # the old email's marker, only if it is still ours: the old email is free
                            "TableName": table_name,
                            "Key": typed(marker_key("EMAIL", old_email)),
                            "ConditionExpression": "#o = :me",
                            "ExpressionAttributeNames": {"#o": "owner"},
                            "ExpressionAttributeValues": {":me": {"S": account_id}},
                        }
                    },
                ]
            )
            return
        except client.exceptions.TransactionCanceledException as exc:
            reasons = exc.response["CancellationReasons"]
            if reasons[1].get("Code") == "ConditionalCheckFailed":
                raise ValueTaken({"email": new_email}) from exc
            # the account changed between our read and our write (or a conflict): read again and retry
    raise RetriesExhausted("the account changed before each of 5 attempts; nothing was written", 5)


REFERENCE: dict[str, Callable[..., Any]] = {
    "raise-limit": raise_limit,
    "unique-sign-up": sign_up,
    "change-email": change_email,
}

__all__ = ["REFERENCE", "change_email", "raise_limit", "sign_up"]
