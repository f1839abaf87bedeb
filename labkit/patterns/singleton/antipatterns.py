"""Anti-patterns kept on purpose for the lesson: read-modify-write with PutItem, and Scan + filter.

Never use these for real; :class:`~labkit.patterns.singleton.FlagStore` shows the safe way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...shared._errors_map import map_errors
from ...shared.capacity import item_size
from ...shared.catalogue import Op
from ...shared.codec import from_wire, to_wire
from ...shared.errors import LabkitError, error_code
from .guards import check_size
from .results import FlagRead
from .schema import VERSION_ATTR, version_of
from .store import FlagStore


def unsafe_set_flags(store: FlagStore, changes: Mapping[str, object] | None = None, **kw: object) -> int:
    """ANTI-PATTERN, kept for the lesson: read-modify-write of the whole item with PutItem.

    GetItem, change the flags in memory, PutItem the whole item back — with no condition.
    Two admins who read the same old item both write it back whole, and the second Put
    silently erases the first admin's change (a lost update). Use :meth:`FlagStore.set_flags`.
    Returns the version it wrote (which also shows the loss: two changes, one bump).
    """
    wanted = store.schema.validate({**(changes or {}), **kw})
    return unsafe_update(store, lambda _flags: wanted)


def unsafe_update(store: FlagStore, change: Callable[[Mapping[str, bool | int | str]], Mapping[str, object]]) -> int:
    """ANTI-PATTERN, kept for the lesson: :func:`unsafe_set_flags` with values computed from the read.

    Two admins who each raise a limit by 10 from the same old value write the same new
    value: one raise is lost. Use :meth:`FlagStore.update`. Returns the version it wrote.
    """
    current = store.read_item()
    stored = from_wire(current) if current is not None else {"PK": store.pk, "SK": store.sk, **store.schema.defaults()}
    wanted = store.schema.validate(change(store.schema.decode(stored)[0]))
    version = (version_of(stored) or 0) + 1
    new_item = {**stored, **wanted, VERSION_ATTR: version}
    wire = to_wire(new_item)
    check_size(item_size(current or {}), item_size(wire))
    with map_errors(Op.PUT_ITEM, store.table_name):
        store.client.put_item(TableName=store.table_name, Item=wire)
    store.cache.invalidate()
    return version


def unsafe_scan_read(store: FlagStore, *, consistent: bool = False) -> FlagRead:
    """ANTI-PATTERN, kept for the lesson: find the singleton with a Scan and a filter.

    The filter runs after the read: DynamoDB reads (and bills) every item in the table to
    return one. Its cost grows with the table; GetItem on the known key stays flat.
    ``read_units`` and ``items_read`` on the result show what it cost.
    """
    kwargs: dict[str, Any] = {
        "TableName": store.table_name,
        "ConsistentRead": consistent,
        "FilterExpression": "#pk = :pk AND #sk = :sk",
        "ExpressionAttributeNames": {"#pk": "PK", "#sk": "SK"},
        "ExpressionAttributeValues": {":pk": {"S": store.pk}, ":sk": {"S": store.sk}},
        "ReturnConsumedCapacity": "TOTAL",
    }
    units, scanned, found = 0.0, 0, None
    try:
        with map_errors(Op.SCAN, store.table_name):
            while True:
                page = store.client.scan(**kwargs)
                units += float(page.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0))
                scanned += int(page.get("ScannedCount", 0))
                if page.get("Items"):
                    found = page["Items"][0]
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except LabkitError as exc:
        return FlagRead(
            store.schema.defaults(),
            "defaults",
            f"Scan failed: {exc.__cause__ or exc}; using safe defaults",
            error_code=error_code(exc.__cause__ or exc),
        )
    if found is None:
        return FlagRead(
            store.schema.defaults(),
            "defaults",
            "Scan found no settings item",
            read_units=units,
            items_read=scanned,
        )
    return store.flag_read(found, units, scanned)


__all__ = ["unsafe_scan_read", "unsafe_set_flags", "unsafe_update"]
