"""Requests that survive a restart: persist a TransactWriteItems (its token included) before sending it.

* :func:`enqueue` writes the whole request under ``PK=OUTBOX``, ``SK=<entry id>`` — one partition
  key for every entry, so a restarted process finds them all with one Query (a Query needs an exact
  partition key; ``begins_with`` works only on the sort key). Fine for a modest outbox; a busy one
  spreads entries over a few fixed keys (``OUTBOX#0`` … ``OUTBOX#7``) and queries each. The Put has
  no condition: resending it (botocore, after a lost answer) writes the same entry again. Give every
  request its own entry id (a uuid4).
* :func:`pending` lists them (strongly consistent, every page: boto3's paginator follows
  ``LastEvaluatedKey``).
* :func:`deliver` sends one entry — always the same request, the same ClientRequestToken — and
  says what DynamoDB answered:

  ``"applied"``   done; the entry is deleted.
  ``"refused"``   a condition failed (e.g. the email is taken): a definite answer; resending would be
                  refused again, so the entry is deleted and the caller tells the user.
  ``"ambiguous"`` refused, but the entry is older than the token window: DynamoDB remembers a token
                  for 10 minutes after the first request that used it completed, so this resend was a
                  *new* request, and what refused it may be our own earlier attempt. Deleted; the
                  caller reads the items to tell (for a sign-up: does the account with this id exist?).
  ``"retry"``     no definite answer (a lost answer, throttling, a 5xx, a conflict still after the
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
    client.put_item(TableName=table, Item=entry)
    return entry


def pending(client: Any, table: str) -> list[dict[str, Any]]:
    """Every entry still to deliver, in entry-id order (every page of one strongly consistent Query)."""
    query = {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": PK}, "ConsistentRead": True}
    pages = client.get_paginator("query").paginate(TableName=table, **query)
    return [entry for page in pages for entry in page["Items"]]


def deliver(
    client: Any, table: str, entry: dict[str, Any], *, attempts: int = 3, clock: Callable[[], float] = time.time
) -> str:
    """Send one entry's request; "applied", "refused", "ambiguous" or "retry" (see the module)."""
    request = json.loads(entry["request"]["S"])
    for attempt in range(1, attempts + 1):
        try:
            client.transact_write_items(**request)  # the same request every time: the same token
            outcome = "applied"
        except BotoCoreError:
            return "retry"  # no answer: maybe applied; resend later, same token
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if exc.response["Error"]["Code"] == "TransactionCanceledException" and "TransactionConflict" not in reasons:
                outcome = "ambiguous" if clock() - float(entry["created"]["N"]) > TOKEN_WINDOW else "refused"
            elif attempt < attempts:  # throttled, a 5xx, a conflict: no answer about the request yet
                time.sleep(random.uniform(0, 0.05 * 2**attempt))
                continue
            else:
                return "retry"
        with contextlib.suppress(ClientError, BotoCoreError):  # if this fails, the next run resends it
            client.delete_item(TableName=table, Key={"PK": PK, "SK": entry["SK"]})  # DynamoDB answered
        return outcome
    return "retry"


def deliver_pending(client: Any, table: str, **options: Any) -> dict[str, str]:
    """After a (re)start: deliver every pending entry; what each got, by entry id."""
    return {entry["SK"]["S"]: deliver(client, table, entry, **options) for entry in pending(client, table)}
