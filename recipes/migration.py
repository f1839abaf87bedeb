"""Changing the settings item's shape: write FLAGS#V2 beside FLAGS#V1, then retire V1 in a transaction.

1. :func:`migrate` reads V1 (strongly consistent) and writes V2 = ``transform(V1)`` with
   ``attribute_not_exists(PK)``, which DynamoDB evaluates on the item with exactly V2's key: of two
   migrators one writes, the other overwrites nothing. V2 records the V1 version it came from.
   A refusal after a lost answer may be our own first attempt (botocore resent it), so on a
   refusal the V2 found is compared with what this migrator would write.
2. Switch the writers, then every reader, to V2 (configuration).
3. :func:`retire` deletes V1 in one TransactWriteItems: a ``ConditionCheck`` that V2 exists, and a
   ``Delete`` of V1 guarded by "V1 still has the version V2 was migrated from", so a late write to
   V1 is not thrown away silently. Two actions on two distinct items (a transaction may not touch
   one item twice). Its ClientRequestToken makes a resend after a lost answer safe.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

V1 = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}
V2 = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V2"}}


def migrate(client: Any, table: str, transform: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """Write V2 from V1. True if V2 now holds this migration (ours, or an identical one)."""
    v1 = client.get_item(TableName=table, Key=V1, ConsistentRead=True)["Item"]
    v2 = V2 | transform(v1) | {"version": {"N": "1"}, "migrated_from_version": v1["version"]}
    attempt = 1
    while True:
        try:
            client.put_item(
                TableName=table,
                Item=v2,
                ConditionExpression="attribute_not_exists(PK)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return True
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":  # V2 exists: the same migration, or another
                return bool(exc.response.get("Item") == v2)
            if code != "TransactionConflictException" or attempt == 3:
                raise  # a conflict (a transaction on V2 at that moment) is retried twice, then raised
        time.sleep(random.uniform(0, 0.05 * 2**attempt))
        attempt += 1


def retire(client: Any, table: str, *, token: str) -> None:
    """Delete V1 if V2 exists and V1 is unchanged since the migration; raises ClientError if not."""
    v2 = client.get_item(TableName=table, Key=V2, ConsistentRead=True).get("Item")
    if v2 is None:
        raise LookupError("no FLAGS#V2 item: migrate first; FLAGS#V1 was kept")
    exists = {"TableName": table, "Key": V2, "ConditionExpression": "attribute_exists(PK)"}
    unchanged = {"TableName": table, "Key": V1, "ConditionExpression": "version = :migrated"}
    unchanged["ExpressionAttributeValues"] = {":migrated": v2["migrated_from_version"]}
    client.transact_write_items(  # the caller fixes the token before the first call: resends apply once
        TransactItems=[{"ConditionCheck": exists}, {"Delete": unchanged}], ClientRequestToken=token
    )
