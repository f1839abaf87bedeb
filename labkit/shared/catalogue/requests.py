"""What a request names: its items (by the catalogue's :class:`~labkit.shared.catalogue.records.KeysAt`), its
tables, and the actions inside a transaction."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from .records import CATALOGUE, KeysAt, Op

#: The action names inside TransactItems, and the operation each one is a part of.
TRANSACT_ACTIONS: Final[Mapping[str, Op]] = {
    "Get": Op.GET_ITEM,
    "Put": Op.PUT_ITEM,
    "Update": Op.UPDATE_ITEM,
    "Delete": Op.DELETE_ITEM,
    "ConditionCheck": Op.GET_ITEM,
}
#: The action (inside TransactItems) that does what each single-item operation does.
ACTION_OF: Final[Mapping[str, str]] = {
    Op.GET_ITEM: "Get",
    Op.PUT_ITEM: "Put",
    Op.UPDATE_ITEM: "Update",
    Op.DELETE_ITEM: "Delete",
}


def is_write(operation: str) -> bool:
    """Does ``operation`` write items? (PartiQL may: True; control plane: False.)"""
    found = CATALOGUE.get(operation)
    return found is not None and found.writes


def item_keys(operation: str, params: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """Every item a request names: (table, the attributes that hold its key, writes it?), in request order.

    The attributes are the request's ``Key`` — or its ``Item``, which holds the key among other
    attributes: the caller picks the key attributes with the table's key schema. A ConditionCheck
    inside a transaction reads its item. Query, Scan, PartiQL and control operations name no
    items (they yield nothing); a malformed request yields what can be read of it.
    """
    found = CATALOGUE.get(operation)
    if found is None:
        return
    at = found.keys
    table = params.get("TableName")
    if at in (KeysAt.KEY, KeysAt.ITEM):
        attrs = params.get(at.value)
        if isinstance(table, str) and isinstance(attrs, Mapping):
            yield table, attrs, found.writes
    elif at is KeysAt.TRANSACT_ITEMS:
        for action in params.get("TransactItems") or ():
            if not isinstance(action, Mapping):
                continue
            for kind, body in action.items():
                if not isinstance(body, Mapping) or kind not in TRANSACT_ACTIONS:
                    continue
                name, attrs = body.get("TableName"), body.get("Key") or body.get("Item")
                if isinstance(name, str) and isinstance(attrs, Mapping):
                    yield name, attrs, kind not in ("Get", "ConditionCheck")
    elif at is KeysAt.BATCH_GET:
        for name, request in (params.get("RequestItems") or {}).items():
            for key in (request.get("Keys") or ()) if isinstance(request, Mapping) else ():
                if isinstance(key, Mapping):
                    yield name, key, False
    elif at is KeysAt.BATCH_WRITE:
        for name, requests in (params.get("RequestItems") or {}).items():
            for entry in requests if isinstance(requests, list) else ():
                put = entry.get("PutRequest") if isinstance(entry, Mapping) else None
                delete = entry.get("DeleteRequest") if isinstance(entry, Mapping) else None
                attrs = (put or {}).get("Item") if put else (delete or {}).get("Key")
                if isinstance(attrs, Mapping):
                    yield name, attrs, True


def tables_of(operation: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """The tables a request names (``TableName``, or the tables of its batch or transaction), in order."""
    names: dict[str, None] = {}
    table = params.get("TableName")
    if isinstance(table, str):
        names[table] = None
    for name, _, _ in item_keys(operation, params):
        names[name] = None
    requests = params.get("RequestItems")
    if isinstance(requests, Mapping):
        names.update(dict.fromkeys(str(t) for t in requests))
    return tuple(names)


__all__ = [
    "ACTION_OF",
    "TRANSACT_ACTIONS",
    "is_write",
    "item_keys",
    "tables_of",
]
