"""ItemCollectionMetrics (``ReturnItemCollectionMetrics=SIZE``): the size of the item collection a
write touched, on tables with a local secondary index.

DynamoDB API reference, ItemCollectionMetrics: "ItemCollectionKey - The partition key value of
the item collection. SizeEstimateRangeGB - An estimate of item collection size, in gigabytes. This
value is a two-element array containing a lower bound and an upper bound for the estimate. The
estimate includes the size of all the items in the table, plus the size of all attributes
projected into all of the local secondary indexes on that table." Only tables with a local
secondary index have item collections; for others nothing is returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...shared.capacity import item_size
from ...shared.catalogue import ITEM_WRITES, WRITES
from ..plan import Plan
from ..schema import IndexSchema, SchemaOf, TableSchema

GIGABYTE = 1024**3


def _projected(item: Mapping[str, Any], schema: TableSchema, index: IndexSchema) -> dict[str, Any] | None:
    """The index entry an item has in a local secondary index (None: the item lacks the index's sort key)."""
    if any(name not in item for name, _ in index.keys):
        return None
    if index.projection == "ALL":
        return dict(item)
    names = set(schema.key_names) | {name for name, _ in index.keys}
    if index.projection == "INCLUDE":
        names |= set(index.include)
    return {k: v for k, v in item.items() if k in names}


def collection_size(items: Iterable[Mapping[str, Any]], schema: TableSchema) -> int:
    """Bytes of an item collection: its items plus their entries in every local secondary index."""
    local = [i for i in schema.indexes if i.local]
    total = 0
    for item in items:
        total += item_size(item)
        for index in local:
            entry = _projected(item, schema, index)
            if entry is not None:
                total += item_size(entry)
    return total


def metrics(schema: TableSchema, key_value: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One ItemCollectionMetrics entry: the collection's key and its size range in GB (whole gigabytes around it)."""
    low = math.floor(collection_size(items, schema) / GIGABYTE)
    return {
        "ItemCollectionKey": {schema.hash_key: dict(key_value)},
        "SizeEstimateRangeGB": [float(low), float(low + 1)],
    }


def has_collections(schema: TableSchema | None) -> bool:
    """Item collections exist only on tables with a local secondary index."""
    return schema is not None and any(i.local for i in schema.indexes)


def attach(
    operation: str,
    params: Mapping[str, Any],
    plan: Plan,
    payload: dict[str, Any],
    schema_of: SchemaOf,
    collection: Callable[[str, str, Mapping[str, Any]], list[dict[str, Any]]],
) -> None:
    """ItemCollectionMetrics for ReturnItemCollectionMetrics=SIZE, set in ``payload`` (tables with a local
    secondary index); ``collection(table, hash key, value)``: the items of one item collection."""
    payload.pop("ItemCollectionMetrics", None)
    if params.get("ReturnItemCollectionMetrics") != "SIZE" or operation not in WRITES:
        return
    found: dict[str, dict[str, dict[str, Any]]] = {}  # table -> canonical pk -> metrics
    for target in plan.writes:
        schema = schema_of(target.table)
        if schema is None or not has_collections(schema) or target.pk in found.get(target.table, {}):
            continue
        key_value = target.key[schema.hash_key]
        items = collection(target.table, schema.hash_key, key_value)
        found.setdefault(target.table, {})[target.pk] = metrics(schema, key_value, items)
    if operation in ITEM_WRITES:
        for per_table in found.values():
            payload["ItemCollectionMetrics"] = next(iter(per_table.values()))
    elif found:
        payload["ItemCollectionMetrics"] = {table: list(per_key.values()) for table, per_key in found.items()}


__all__ = ["GIGABYTE", "attach", "collection_size", "has_collections", "metrics"]
