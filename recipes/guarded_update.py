"""A change computed from what was read, guarded by the item's version, retried boundedly.

Use it when the new value depends on the old one ("raise the limit by 10"). A change that does not
(set ``signup_enabled`` to true) needs no guard: ``SET`` of that one attribute keeps every other
writer's change (lesson 01 §7).

Each attempt reads the item (strongly consistent), computes ``change(item)`` and writes it with
``ConditionExpression: version = :read``. A refusal (``ConditionalCheckFailedException``: another
writer got there first) or a ``TransactionConflictException`` means "not applied": back off with
full jitter and try again, at most ``attempts`` writes, then raise :class:`RetriesExhausted` —
never return as if it had worked.

A lost answer (a read timeout, a dropped connection) means "maybe applied": botocore resends the
same UpdateItem, which then meets *its own* write as a conflict, and a plain loop would apply the
change a second time. A 5xx that outlived botocore's retries is "maybe applied" too (DynamoDB: a
write answered 500 may have succeeded or failed). So every write also records its ``op_id`` in the
item: an attempt that finds its op_id there was applied, and returns. Pick one op_id per change (a
uuid4), before the first attempt, and keep it across *your* retries too: a caller that calls
``update`` again after an error must pass the same op_id, or a change that did land is applied twice.

The window: the item keeps the op_ids of its last ``KEEP_OPS + 1`` writes, so a change is still
recognised when up to :data:`KEEP_OPS` (10) other writes landed between its lost answer and the next
read. When more did (the version moved on by more than ``KEEP_OPS + 1`` since the read the failed
write was computed from), its op_id may have left the item and nobody can tell whether it was
applied: :class:`OutcomeUnknown` is raised, nothing more is written, and the caller reads the item
and decides. Every writer of the item must use this loop, or keep ``version`` and ``recent_ops`` as
it does (each write adds 1 to ``version`` and its op_id to ``recent_ops``): a writer that drops
``recent_ops`` erases the op_ids a lost answer is recognised by.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

NOT_APPLIED = {"ConditionalCheckFailedException", "TransactionConflictException"}
KEEP_OPS = 10  # writes that may overtake a lost answer: the item keeps KEEP_OPS + 1 op_ids


class RetriesExhausted(Exception):
    """Every attempt met another writer's change; nothing of this change was written."""


class OutcomeUnknown(Exception):
    """More than KEEP_OPS writes overtook a write whose answer was lost: read the item and decide."""


def read(client: Any, table: str, key: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The item (strongly consistent) and the op_ids of the last changes written to it."""
    item: dict[str, Any] | None = client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    if item is None:
        raise LookupError(f"no item at {key}: create it first (a Put with attribute_not_exists(PK))")
    return item, [op["S"] for op in item.get("recent_ops", {"L": []})["L"]]


def update(
    client: Any,
    table: str,
    key: Mapping[str, Any],
    change: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    op_id: str,
    attempts: int = 5,
    base_delay: float = 0.05,
) -> dict[str, Any]:
    """Apply ``change`` (the item as read -> the attributes to SET, wire form) once; the item written."""
    tried_on: int | None = None  # the version a failed write was computed from: it may have landed
    for attempt in range(1, attempts + 1):
        item, done = read(client, table, key)
        if op_id in done:
            return item  # an earlier attempt was applied; its answer was lost
        check_window(tried_on, item)
        new = change(item)
        names = {f"#a{i}": name for i, name in enumerate(new)}
        values = {f":a{i}": value for i, value in enumerate(new.values())} | {
            ":read": item["version"],
            ":next": {"N": str(int(item["version"]["N"]) + 1)},
            ":ops": {"L": [{"S": op} for op in [*done, op_id][-(KEEP_OPS + 1) :]]},
        }
        tried_on = int(item["version"]["N"])
        sets = "".join(f"#a{i} = :a{i}, " for i in range(len(new)))
        try:
            answer = client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression=f"SET {sets}version = :next, recent_ops = :ops",
                ConditionExpression="version = :read",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
            return dict(answer["Attributes"])
        except (ReadTimeoutError, ConnectionClosedError):
            continue  # maybe applied: the next read tells (our op_id is in the item, or not)
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
                continue  # a 5xx after botocore's retries: maybe applied too, the next read tells
            if exc.response["Error"]["Code"] not in NOT_APPLIED:
                raise
            if attempt < attempts:  # no pointless sleep after the last attempt
                time.sleep(random.uniform(0, base_delay * 2**attempt))
    item, done = read(client, table, key)  # was the last attempt applied after all?
    if op_id in done:
        return item
    check_window(tried_on, item)
    raise RetriesExhausted(f"gave up after {attempts} attempt(s): another writer changed the item each time")


def check_window(tried_on: int | None, item: Mapping[str, Any]) -> None:
    """Raise OutcomeUnknown if a write computed from version ``tried_on`` may have landed and left the window."""
    if tried_on is not None and int(item["version"]["N"]) - tried_on > KEEP_OPS + 1:
        raise OutcomeUnknown(
            f"more than {KEEP_OPS} writes changed the item since a write of this change lost its answer: "
            "its op_id may have left recent_ops, so nobody can tell whether it was applied; nothing more "
            "was written. Read the item and decide."
        )
