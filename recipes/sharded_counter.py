"""A counter written on every request, spread over N items (shards), read as their sum.

Shard ``i`` of counter ``name`` is ``PK=COUNTER#<name>#<i>``, ``SK=SHARD``: its own partition key,
so its own partition. Two ways to add, and you must choose:

* :func:`add` — one ``UpdateItem ADD``, 1 write unit. **Approximate**: a lost answer (a read
  timeout, a dropped connection) is resent by botocore, and ``ADD`` is not idempotent, so that
  increment counts twice. Fine for page views; not for money.
* :func:`add_once` — the same ``ADD`` inside a one-action TransactWriteItems with a
  ClientRequestToken: DynamoDB applies a token once, so botocore's resends and ours count once.
  2 write units, and only within the token's 10 minutes (a token is valid for 10 minutes after the
  first request that uses it completed). Its shard is derived from the token, so a resend is the
  identical request.

:func:`total` reads every shard with one BatchGetItem (at most 100 keys), asks again for the keys
DynamoDB left in ``UnprocessedKeys`` (with backoff), and sums. Strongly consistent by default: the
sum of N reads, each exact when read — not one snapshot (wrong for a balance).
"""

from __future__ import annotations

import random
import time
import zlib
from typing import Any

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError


def shard_key(name: str, shard: int) -> dict[str, Any]:
    return {"PK": {"S": f"COUNTER#{name}#{shard}"}, "SK": {"S": "SHARD"}}


def add(client: Any, table: str, name: str, shards: int, by: int = 1) -> None:
    """ADD ``by`` to a random shard. Approximate: a lost answer resent by botocore counts twice."""
    client.update_item(
        TableName=table,
        Key=shard_key(name, random.randrange(shards)),
        UpdateExpression="ADD n :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )


def add_once(client: Any, table: str, name: str, shards: int, by: int = 1, *, token: str, attempts: int = 3) -> None:
    """ADD ``by`` exactly once per ``token`` (a uuid4 fixed before the first call), within 10 minutes."""
    update = {"TableName": table, "Key": shard_key(name, zlib.crc32(token.encode()) % shards)}
    update |= {"UpdateExpression": "ADD n :by", "ExpressionAttributeValues": {":by": {"N": str(by)}}}
    request = {"TransactItems": [{"Update": update}], "ClientRequestToken": token}
    for attempt in range(1, attempts + 1):
        try:
            client.transact_write_items(**request)  # the same request, the same token, every time
            return
        except (ReadTimeoutError, ConnectionClosedError):
            if attempt == attempts:
                raise  # maybe applied: call again with the same token (within 10 minutes) to be sure
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if "TransactionConflict" not in reasons or attempt == attempts:
                raise
        time.sleep(random.uniform(0, 0.05 * 2**attempt))


def total(client: Any, table: str, name: str, shards: int, *, consistent: bool = True) -> int:
    """The counter's value: every shard read with one BatchGetItem (leftovers asked again), summed."""
    request = {table: {"Keys": [shard_key(name, i) for i in range(shards)], "ConsistentRead": consistent}}
    counted = 0
    for attempt in range(10):
        answer = client.batch_get_item(RequestItems=request)
        counted += sum(int(item.get("n", {"N": "0"})["N"]) for item in answer["Responses"].get(table, []))
        request = answer.get("UnprocessedKeys") or {}
        if not request:
            return counted
        time.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))  # busy: back off, then ask for the rest
    raise RuntimeError(f"{name}: shards still unprocessed after 10 BatchGetItem calls; try again later")
