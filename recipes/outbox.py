"""Requests that survive a restart: persist a TransactWriteItems (its token included) before sending it.

* :func:`enqueue` writes the whole request under ``PK=OUTBOX``, ``SK=<entry id>`` — one partition
  key for every entry, so a restarted process finds them all with one Query (a Query needs an exact
  partition key; ``begins_with`` works only on the sort key). Fine for a modest outbox; a busy one
  spreads entries over a few fixed keys (``OUTBOX#0`` … ``OUTBOX#7``) and queries each.
* :func:`pending` lists them (strongly consistent, every page).
* :func:`deliver` sends one entry — always the same request, the same ClientRequestToken — and
  says what DynamoDB answered:

  ``"applied"``  done; the entry is deleted.
  ``"refused"``  a condition failed (e.g. the email is taken): a definite answer; resending would be
                 refused again, so the entry is deleted and the caller tells the user.
  ``"ambiguous"`` refused, but the entry is older than the token window: DynamoDB remembers a
                 token for 10 minutes after the first request that used it completed, so this
                 resend was a *new* request, and what refused it may be our own earlier attempt.
                 Deleted; the caller reads the items to tell (for a sign-up: does the account with
                 this id exist?).
  ``"retry"``    no definite answer (a lost answer, throttling, a 5xx, a conflict still after the
                 retries): the entry stays for the next run.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

TOKEN_WINDOW = 600  # seconds
PK = {"S": "OUTBOX"}


def enqueue(
    client: Any, table: str, entry_id: str, request: dict[str, Any], *, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """Persist ``request`` (with its ClientRequestToken) BEFORE its first send; the entry, to deliver."""
    entry = {"PK": PK, "SK": {"S": entry_id}, "request": {"S": json.dumps(request)}, "created": {"N": str(clock())}}
    try:
        client.put_item(
            TableName=table,
            Item=entry,
            ConditionExpression="attribute_not_exists(PK)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as exc:
        old: Any = exc.response.get("Item", {})  # the entry under this id, as it is
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException" or old.get("request") != entry["request"]:
            raise  # another request under this id: choose another id
        return dict(old)  # already enqueued (by us: botocore resent a lost answer), with its first time
    return entry


def pending(client: Any, table: str) -> list[dict[str, Any]]:
    """Every entry still to deliver, in entry-id order (all pages of one Query)."""
    entries: list[dict[str, Any]] = []
    query = {"TableName": table, "KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": PK}}
    while True:
        page = client.query(**query, ConsistentRead=True)
        entries += page["Items"]
        if "LastEvaluatedKey" not in page:
            return entries
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def deliver(
    client: Any, table: str, entry: dict[str, Any], *, attempts: int = 3, clock: Callable[[], float] = time.time
) -> str:
    """Send one entry's request; "applied", "refused", "ambiguous" or "retry" (see the module)."""
    request = json.loads(entry["request"]["S"])
    for attempt in range(1, attempts + 1):
        try:
            client.transact_write_items(**request)  # the same request every time: same token
            outcome = "applied"
            break
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                return "retry"  # throttled, a 5xx, ...: not a definite answer about the request
            if "TransactionConflict" not in reasons:
                too_old = clock() - float(entry["created"]["N"]) > TOKEN_WINDOW
                outcome = "ambiguous" if too_old else "refused"
                break
        except BotoCoreError:
            return "retry"  # no answer (it may have been applied): resend later, same token
        if attempt == attempts:
            return "retry"  # still conflicting: leave it for the next run
        time.sleep(random.uniform(0, 0.05 * 2**attempt))
    # forget it: DynamoDB answered. If this delete fails, the next run resends the entry: within the
    # token window it is answered as the same request; past it, "ambiguous".
    with contextlib.suppress(ClientError, BotoCoreError):
        client.delete_item(TableName=table, Key={"PK": PK, "SK": entry["SK"]})
    return outcome


def deliver_pending(client: Any, table: str, **options: Any) -> dict[str, str]:
    """After a (re)start: deliver every pending entry; what each got, by entry id."""
    return {entry["SK"]["S"]: deliver(client, table, entry, **options) for entry in pending(client, table)}
