"""Requests that survive a restart: persist a TransactWriteItems (its token included) before sending it.

* :func:`enqueue` writes the whole request under ``PK=OUTBOX``, ``SK=<entry id>`` — one partition
  key for every entry, so a restarted process finds them all with one Query (a Query needs an exact
  partition key; ``begins_with`` works only on the sort key). Fine for a modest outbox; a busy one
  spreads entries over a few fixed keys (``OUTBOX#0`` … ``OUTBOX#7``) and queries each: every entry's
  Put and Delete on one key share one partition's write limit (lesson 03 §1). The Put has
  no condition: resending it (botocore, after a lost answer) writes the same entry again. Give every
  request its own entry id (a uuid4).
* :func:`pending` lists the entries still to deliver (strongly consistent, every page: boto3's
  paginator follows ``LastEvaluatedKey``); ``pending(..., parked=True)``, the dead letters.
* :func:`deliver` sends one entry — always the same request, the same ClientRequestToken — and
  says what DynamoDB answered:

  ``"applied"``   done; the entry is deleted.
  ``"refused"``   a condition failed (e.g. the email is taken): a definite answer; resending would be
                  refused again, so the entry is deleted and the caller tells the user.
  ``"retry"``     only these, which are no answer about the request yet: no answer at all (a lost
                  answer, a timeout: at once), throttling, a 5xx, a conflict (a ``TransactionConflict``,
                  or our own earlier send still in progress: after ``attempts`` sends, with a jittered
                  pause between them). The entry stays for the next run.
  ``"parked"``    any other error (``ValidationException``, ``AccessDeniedException``,
                  ``IdempotentParameterMismatchException``, a cancellation for a ``ValidationError``…,
                  or botocore's ``ParamValidationError``: a malformed request it refuses to send):
                  resending cannot help. The entry leaves :func:`pending` — a dead letter, marked
                  ``parked`` with the error as its reason — for a person to fix or delete.
  ``"ambiguous"`` refused, but the entry is older than the token window: DynamoDB remembers a token
                  for 10 minutes after the first request that used it completed, so this resend was a
                  *new* request, and what refused it may be our own earlier attempt. So the outbox reads
                  the items the request puts (strongly consistent): each stored exactly as put — our
                  earlier attempt was applied: ``"applied"``. Otherwise (another owner, an item changed
                  since, a request with an Update or a Delete, which a read cannot check) it is
                  ``"ambiguous"``, parked for a person to read the items and decide.

A table keyed ``PK``/``SK`` is assumed (the outbox's own, and the items a request puts).
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

TOKEN_WINDOW = 600  # seconds
PK = {"S": "OUTBOX"}
#: No answer about the request yet: throttling, a 5xx (any status >= 500), a conflict, our own send in progress.
KEEP = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
KEEP |= {"TransactionConflictException", "TransactionInProgressException"}
KEEP_REASONS = {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}  # a cancellation's


def enqueue(
    client: Any, table: str, entry_id: str, request: dict[str, Any], *, clock: Callable[[], float] = time.time
) -> dict[str, Any]:
    """Persist ``request`` (with its ClientRequestToken) BEFORE its first send; the entry, to deliver."""
    entry = {"PK": PK, "SK": {"S": entry_id}, "request": {"S": json.dumps(request)}, "created": {"N": str(clock())}}
    client.put_item(TableName=table, Item=entry)
    return entry


def pending(client: Any, table: str, *, parked: bool = False) -> list[dict[str, Any]]:
    """The entries still to deliver (``parked=True``: the dead letters, each with its ``parked`` reason),
    in entry-id order: every page of one strongly consistent Query."""
    query = {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": PK}, "ConsistentRead": True}
    pages = client.get_paginator("query").paginate(TableName=table, **query)
    return [entry for page in pages for entry in page["Items"] if ("parked" in entry) == parked]


def ours(client: Any, request: dict[str, Any]) -> bool:
    """Whether the request only Puts, and each of its items is stored exactly as it put it (consistent reads)."""
    for action in request["TransactItems"]:
        put = action.get("Put")
        key = put and {name: put["Item"][name] for name in ("PK", "SK")}
        if (
            not put
            or client.get_item(TableName=put["TableName"], Key=key, ConsistentRead=True).get("Item") != put["Item"]
        ):
            return False
    return True


def deliver(
    client: Any, table: str, entry: dict[str, Any], *, attempts: int = 3, clock: Callable[[], float] = time.time
) -> str:
    """Send one entry's request; "applied", "refused", "retry", "parked" or "ambiguous" (see the module)."""
    request, key = json.loads(entry["request"]["S"]), {"PK": PK, "SK": entry["SK"]}
    for attempt in range(1, attempts + 1):
        try:
            client.transact_write_items(**request)  # the same request every time: the same token
            outcome, why = "applied", ""
        except ParamValidationError as exc:  # refused before it was sent (a malformed request): never answered
            outcome, why = "parked", f"{type(exc).__name__}: {exc}"  # resending the same request cannot help
        except BotoCoreError:
            return "retry"  # no answer: maybe applied; resend later, same token
        except ClientError as exc:
            error, status = exc.response["Error"], exc.response["ResponseMetadata"].get("HTTPStatusCode", 0)
            reasons = {r.get("Code", "None") for r in exc.response.get("CancellationReasons", [])} - {"None"}
            if error["Code"] in KEEP or reasons & KEEP_REASONS or status >= 500:
                if attempt < attempts:  # no answer about the request yet: back off, send it again
                    time.sleep(random.uniform(0, 0.05 * 2**attempt))
                    continue
                return "retry"
            outcome, why = "parked", f"{error['Code']}: {error.get('Message', '')}"  # resending cannot help
            if error["Code"] == "TransactionCanceledException" and reasons == {"ConditionalCheckFailed"}:
                outcome = "refused"
                if clock() - float(entry["created"]["N"]) > TOKEN_WINDOW:  # refused by our own earlier send?
                    try:
                        outcome = "applied" if ours(client, request) else "ambiguous"
                    except (ClientError, BotoCoreError):
                        return "retry"  # the read failed: the next run sends it again, and reads
                    why = "refused after the token window, and its items are not all as it put them: read them"
        with contextlib.suppress(ClientError, BotoCoreError):  # if this fails, the next run does it again
            if outcome in ("parked", "ambiguous"):  # a dead letter, with why: out of pending()
                update = {"UpdateExpression": "SET parked = :why", "ConditionExpression": "attribute_exists(PK)"}
                client.update_item(TableName=table, Key=key, ExpressionAttributeValues={":why": {"S": why}}, **update)
            else:
                client.delete_item(TableName=table, Key=key)  # DynamoDB answered
        return outcome
    return "retry"


def deliver_pending(client: Any, table: str, **options: Any) -> dict[str, str]:
    """After a (re)start: deliver every pending entry; what each got, by entry id."""
    return {entry["SK"]["S"]: deliver(client, table, entry, **options) for entry in pending(client, table)}
