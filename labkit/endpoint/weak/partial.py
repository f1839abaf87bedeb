"""``unprocessed-items`` and ``short-page``: a batch that leaves its last item over, a page that ends early.

Plain data over the request and its :class:`~labkit.endpoint.plan.Plan`; the stage
(:mod:`.stage`) calls these around the store's apply.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...shared.catalogue import Op
from ..plan import Plan
from ..schema import SchemaOf
from ..wire.decode import Request

WireItem = dict[str, Any]


# unprocessed-items ----------------------------------------------------------------------------
def split_last(request: Request, plan: Plan) -> tuple[Request | None, Plan, dict[str, Any]]:
    """(the request without its last item, or None if that was its only one; its plan, narrowed
    the same way (validation is not run again); that item as ``UnprocessedItems`` /
    ``UnprocessedKeys`` holds it, exactly as sent)."""
    tables: dict[str, Any] = request.params["RequestItems"]
    last = list(tables)[-1]
    rest = dict(tables)
    parsed = dict(plan.parsed)
    if request.operation == Op.BATCH_WRITE_ITEM:
        entries = list(tables[last])
        left: dict[str, Any] = {last: [entries.pop()]}
        rest[last] = entries
        if not entries:
            del rest[last]
        narrowed = dataclasses.replace(plan, writes=plan.writes[:-1], parsed=parsed)
    else:
        entry = tables[last]
        keys = list(entry["Keys"])
        left = {last: {**entry, "Keys": [keys.pop()]}}
        rest[last] = {**entry, "Keys": keys}
        if keys:  # the table's scope is a new dict: its parsed expressions go with it
            parsed[id(rest[last])] = plan.parsed_of(entry)
        else:
            del rest[last]
        narrowed = dataclasses.replace(plan, reads=plan.reads[:-1], gets=plan.gets[:-1], parsed=parsed)
    if not rest:
        return None, plan, left
    return dataclasses.replace(request, params={**request.params, "RequestItems": rest}), narrowed, left


def left_field(operation: str) -> str:
    return "UnprocessedItems" if operation == Op.BATCH_WRITE_ITEM else "UnprocessedKeys"


def all_left(operation: str, left: dict[str, Any]) -> dict[str, Any]:
    """The answer to a batch whose only item was left unprocessed (nothing applied, nothing read)."""
    if operation == Op.BATCH_WRITE_ITEM:
        return {"UnprocessedItems": left}
    return {"Responses": {}, "UnprocessedKeys": left}


def add_left(operation: str, payload: dict[str, Any], left: dict[str, Any]) -> None:
    """Put the item left over into the answer's UnprocessedItems / UnprocessedKeys."""
    found = payload.setdefault(left_field(operation), {})
    for table, entry in left.items():
        if operation == Op.BATCH_WRITE_ITEM:
            found.setdefault(table, []).extend(entry)
        elif table in found:
            found[table]["Keys"].extend(entry["Keys"])
        else:
            found[table] = entry


# short-page -------------------------------------------------------------------------------------
def page_key(
    request: Request, schema_of: SchemaOf, scanned: list[tuple[str, str | None, list[WireItem]]]
) -> WireItem | None:
    """The LastEvaluatedKey of a page that ended after its one item (the table's and the index's keys)."""
    items = [item for _, _, found in scanned for item in found]
    schema = schema_of(str(request.params["TableName"]))
    if not items or schema is None:
        return None
    names = [name for name, _ in schema.keys]
    index = request.params.get("IndexName")
    found = None if index is None else schema.index(str(index))
    if found is not None:
        names += [name for name, _ in found.keys if name not in names]
    item = items[-1]
    return {name: item[name] for name in names if name in item}


__all__ = ["add_left", "all_left", "left_field", "page_key", "split_last"]
