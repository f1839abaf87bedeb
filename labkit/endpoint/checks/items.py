"""A key and an item against a table's schema: what DynamoDB checks before and after a write.

Key types and sizes, empty key strings and binaries, secondary index key types, the 400 KB item
size. A key or index key of the wrong type is a :class:`KeyMismatch`: a ValidationException on
its own, a cancellation reason (``ValidationError``) inside a TransactWriteItems.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...shared import constants as C
from ...shared.capacity import item_size, value_size
from ...shared.partition_keys import canonical
from ..errors import ClientFault
from ..schema import TableSchema
from ..values import check_value


class KeyMismatch(ClientFault):
    """A key (or index key) value of the wrong type for the table."""

    def __init__(self, message: str) -> None:
        super().__init__("ValidationException", message)


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", message)


def _key_size(schema: TableSchema, name: str, value: Mapping[str, Any]) -> None:
    size = value_size(value)
    if name == schema.hash_key and size > C.MAX_PARTITION_KEY_BYTES:
        raise _invalid(
            "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size "
            f"limit of{C.MAX_PARTITION_KEY_BYTES} bytes"
        )
    if name != schema.hash_key and size > C.MAX_SORT_KEY_BYTES:
        raise _invalid(
            "One or more parameter values were invalid: Aggregated size of all range keys has exceeded "
            f"the size limit of {C.MAX_SORT_KEY_BYTES} bytes"
        )


def _empty(value: Mapping[str, Any]) -> bool:
    return value.get("S") == "" or value.get("B") == ""


def _check_key_value(schema: TableSchema, name: str, kind: str, value: Mapping[str, Any]) -> None:
    """A key attribute's value of the right type: not empty, not too large."""
    if _empty(value):
        raise _invalid(
            "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
            f"empty {'string' if kind == 'S' else 'binary'} value. Key: {name}"
        )
    _key_size(schema, name, value)


def check_key(schema: TableSchema, key: Any) -> str:
    """A primary key for ``schema``; returns the partition key's canonical string."""
    if not isinstance(key, dict):
        raise ClientFault("SerializationException", "Key must be a JSON object")
    for value in key.values():
        check_value(value)
    if set(key) != set(schema.key_names):
        raise KeyMismatch("The provided key element does not match the schema")
    for name, kind in schema.keys:
        value = key[name]
        if next(iter(value)) != kind:
            raise KeyMismatch("The provided key element does not match the schema")
        _check_key_value(schema, name, kind, value)
    return canonical(key[schema.hash_key])


def check_stored_item(schema: TableSchema, item: Mapping[str, Any], updated: bool = False) -> None:
    """What DynamoDB checks on an item as it will be stored: index key types, empty index keys, size.

    ``updated``: the item an UpdateItem made (DynamoDB words two of the messages differently).
    Indexes are checked in name order (DynamoDB names the first index, by name, that fails).
    """
    for index in sorted(schema.indexes, key=lambda i: i.name):
        for name, kind in index.keys:
            value = item.get(name)
            if value is None:
                continue
            actual = next(iter(value))
            if actual != kind:
                raise KeyMismatch(
                    f"One or more parameter values were invalid: Type mismatch for Index Key {name} "
                    f"Expected: {kind} Actual: {actual} IndexName: {index.name}"
                )
            if _empty(value):
                what = "string" if kind == "S" else "binary"
                raise _invalid(
                    "One or more parameter values are not valid. The update expression attempted to update a "
                    "secondary index key to a value that is not supported. The AttributeValue for a key attribute "
                    f"cannot contain an empty {what} value."
                    if updated
                    else "One or more parameter values are not valid. A value specified for a secondary index "
                    "key is not supported. The AttributeValue for a key attribute cannot contain an empty "
                    f"{what} value. IndexName: {index.name}, IndexKey: {name}"
                )
    if item_size(item) > C.MAX_ITEM_BYTES:
        raise _invalid(
            "Item size to update has exceeded the maximum allowed size"
            if updated
            else "Item size has exceeded the maximum allowed size"
        )


def check_item(schema: TableSchema, item: Any) -> tuple[dict[str, Any], str]:
    """A whole item for ``schema``; returns its key and the partition key's canonical string."""
    if not isinstance(item, dict):
        raise ClientFault("SerializationException", "Item must be a JSON object")
    for value in item.values():
        check_value(value)
    for name, kind in schema.keys:
        value = item.get(name)
        if value is None:
            raise _invalid(f"One or more parameter values were invalid: Missing the key {name} in the item")
        actual = next(iter(value))
        if actual != kind:
            raise KeyMismatch(
                f"One or more parameter values were invalid: Type mismatch for key {name} expected: {kind} "
                f"actual: {actual}"
            )
        _check_key_value(schema, name, kind, value)
    check_stored_item(schema, item)
    key = {name: item[name] for name in schema.key_names}
    return key, canonical(item[schema.hash_key])


__all__ = ["KeyMismatch", "check_item", "check_key", "check_stored_item"]
