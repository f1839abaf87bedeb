"""Time to Live as DynamoDB does it: which items are expired, and their deletion as a service delete.

DynamoDB's developer guide ("Using time to live (TTL) in DynamoDB"): an item is eligible when the
table's TTL attribute is a top-level Number holding Unix epoch seconds that is less than the current
time and "no more than five years in the past"; any other item is ignored by the TTL processes.
"Items with valid, expired TTL attributes may be deleted by the system at any time, typically within
a few days of their expiration" — until then they are read, queried and scanned like any other
item. A deleted item goes into DynamoDB Streams "as service deletions instead of user deletes": its
REMOVE record's ``userIdentity`` is :data:`SERVICE_IDENTITY`: the developer guide writes it
``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}`` (as a Lambda event shows it); the
Streams API's GetRecords answers it in its ``Identity`` shape, ``{"PrincipalId": ..., "Type": ...}``,
the names botocore reads (decision 144).

In the lab nothing is deleted by time alone: an expired item stays until the lab deletes it
(``Labkit.ExpireItems``, or the race lab's ``ttl-delete`` step), by the engine's epoch
(:meth:`labkit.endpoint.DynamoEngine.epoch`). :func:`expire` deletes through
:func:`.moto_adapter.service_delete` and :meth:`MotoStore.commit` (the data directory, the partition
index and the listeners follow each deletion as they follow any write).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import Op
from .changes import Change, Commit
from .moto_adapter import service_delete

if TYPE_CHECKING:
    from .moto_store import MotoStore

#: ``Records[].userIdentity`` of a stream record for an item the TTL process deleted, as GetRecords answers it.
SERVICE_IDENTITY: dict[str, str] = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
#: "no more than five years in the past": five years of 365.25 days, in seconds.
FIVE_YEARS_SECONDS = 5 * 36525 * 864

WireItem = dict[str, Any]


def expires_at(item: WireItem, attribute: str) -> Decimal | None:
    """The item's TTL (epoch seconds) when its ``attribute`` is a top-level Number, else None."""
    value = item.get(attribute)
    if not isinstance(value, dict) or "N" not in value:
        return None
    try:
        found = Decimal(str(value["N"]))
    except InvalidOperation:
        return None
    return found if found.is_finite() else None


def is_expired(item: WireItem, attribute: str, now: float) -> bool:
    """Would DynamoDB's TTL process delete the item at epoch ``now``? Its TTL is a Number less than
    ``now`` and no more than five years before it."""
    at = expires_at(item, attribute)
    if at is None:
        return False
    current = Decimal(repr(float(now)))
    return current - FIVE_YEARS_SECONDS <= at < current


def ttl_attribute(store: MotoStore, account: str, region: str, table: str) -> str | None:
    """The table's TTL attribute when TTL is enabled on it (DescribeTimeToLive), else None."""
    found = store.call(account, region, Op.DESCRIBE_TIME_TO_LIVE, {"TableName": table})
    ttl = found.get("TimeToLiveDescription") or {}
    return str(ttl["AttributeName"]) if ttl.get("TimeToLiveStatus") == "ENABLED" else None


def expired_items(store: MotoStore, account: str, region: str, table: str, now: float) -> list[WireItem]:
    """The table's items DynamoDB's TTL process would delete at epoch ``now`` (none if TTL is off)."""
    attribute = ttl_attribute(store, account, region, table)
    if attribute is None:
        return []
    return [item for item in store.all_items(account, region, table) if is_expired(item, attribute, now)]


def expire(store: MotoStore, account: str, region: str, table: str, now: float) -> int:
    """Delete the table's expired items as DynamoDB's TTL process does, one service delete each: a
    commit each, and with the table's stream on a REMOVE record whose ``userIdentity`` is the
    service's. How many were deleted."""
    moto_table = store.table_object(account, region, table)
    names = store.key_names(moto_table)
    deleted = 0
    for item in expired_items(store, account, region, table, now):
        key = {name: item[name] for name in names}
        service_delete(moto_table, key, SERVICE_IDENTITY)
        store.commit(Commit(account, region, Op.EXPIRE_ITEMS, (Change(table, key, item, None),)))
        deleted += 1
    return deleted


__all__ = [
    "FIVE_YEARS_SECONDS",
    "SERVICE_IDENTITY",
    "expire",
    "expired_items",
    "expires_at",
    "is_expired",
    "ttl_attribute",
]
