"""DynamoDB's weak answers, on request: ``X-Labkit-Weak-Answer: stale-read | unprocessed-items | short-page``.

DynamoDB may answer an eventually consistent read with an item as it was before a recent write,
a batch with part of it left in ``UnprocessedItems`` / ``UnprocessedKeys``, a Query or Scan with
a page that ends early. The engine gives these answers only when a request asks for one with
:data:`~labkit.operations.WEAK_ANSWER_HEADER` (the race lab does, per call; an endpoint fault rule
does, by rule), and only where DynamoDB can give them
(:func:`~labkit.operations.weak_answer_misuse`: anywhere else is a 400, nothing applied):

``stale-read``
    the read runs on a view of the store as of before the latest commit to what it reads (the
    item it names, each BatchGetItem key of an eventually consistent table, the partition a
    Query reads on its table or index, the table a Scan reads); when that view answers as the
    store does, as of before the two latest, and so on (at most
    :data:`~labkit.endpoint.store.history.STEPS` commits, within what
    :class:`~labkit.endpoint.store.history.ImageHistory` keeps);
``unprocessed-items``
    the request's last item (its last table's last request or key) is neither applied nor read
    and comes back in ``UnprocessedItems`` / ``UnprocessedKeys`` as it was sent;
``short-page``
    the page evaluates only its first item (``Limit=1``, counted before the FilterExpression)
    and ends with a ``LastEvaluatedKey``.

The answer carries the header back: the kind when it differs from the strong answer, else
``none; <why>``. Plain data and the catalogue; the engine (:mod:`.engine`) calls these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..operations import (
    WEAK_ANSWER_HEADER,
    WEAK_ANSWER_NONE,
    WEAK_ANSWER_WHERE,
    Op,
    WeakAnswer,
    weak_answer_misuse,
)
from ..partition_keys import canonical
from .errors import ClientFault
from .plan import Plan
from .schema import SchemaOf
from .store.changes import Change
from .store.history import Scope, key_text
from .wire.decode import DYNAMODB, Request

#: The request's header as the engine sees it (header names arrive lower-case).
HEADER = WEAK_ANSWER_HEADER.lower()
WireItem = dict[str, Any]


def asked(request: Request) -> str | None:
    """The weak answer a request asks for (its header's value, stripped), or None."""
    value = request.headers.get(HEADER)
    return None if value is None else value.strip()


def check(kind: str, request: Request, served: bool) -> WeakAnswer:
    """The kind, if DynamoDB can give it to this request and this engine gives weak answers; else a 400."""
    if not served:
        raise ClientFault(
            "ValidationException",
            f"{WEAK_ANSWER_HEADER}: this endpoint gives no weak answers (profile dynamodb-local answers "
            f"as DynamoDB Local does); drop the header, or serve with --profile labkit ({WEAK_ANSWER_WHERE})",
        )
    operation = request.operation if request.service == DYNAMODB else f"{request.service} {request.operation}"
    why = weak_answer_misuse(kind, operation, request.params)
    if why is not None:
        raise ClientFault("ValidationException", why)
    return WeakAnswer(kind)


def none(reason: str) -> str:
    """The echo of an answer that could not differ from the strong one."""
    return f"{WEAK_ANSWER_NONE}; {reason}"


# unprocessed-items ----------------------------------------------------------------------------
def split_last(request: Request) -> tuple[Request | None, dict[str, Any]]:
    """(the request without its last item, or None if that was its only one; that item as
    ``UnprocessedItems`` / ``UnprocessedKeys`` holds it, exactly as sent)."""
    tables: dict[str, Any] = request.params["RequestItems"]
    last = list(tables)[-1]
    rest = dict(tables)
    if request.operation == Op.BATCH_WRITE_ITEM:
        entries = list(tables[last])
        left: dict[str, Any] = {last: [entries.pop()]}
        rest[last] = entries
        if not entries:
            del rest[last]
    else:
        entry = dict(tables[last])
        keys = list(entry["Keys"])
        left = {last: {**entry, "Keys": [keys.pop()]}}
        rest[last] = {**entry, "Keys": keys}
        if not keys:
            del rest[last]
    if not rest:
        return None, left
    return dataclasses.replace(request, params={**request.params, "RequestItems": rest}), left


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


# stale-read -------------------------------------------------------------------------------------
def scope(request: Request, plan: Plan, schema_of: SchemaOf) -> Scope:
    """Which changes an eventually consistent read reads: the items it names, or the partition or
    table it reads (a Query on an index: the changes whose images before or after are in that partition)."""
    params = request.params
    if request.operation in (Op.GET_ITEM, Op.BATCH_GET_ITEM):
        return Scope(items=frozenset((table, key_text(key)) for table, key, strong, _ in plan.gets if not strong))
    table = str(params["TableName"])
    partition = plan.reads[0][1] if plan.reads and request.operation == Op.QUERY else ""
    schema = schema_of(table)
    index = params.get("IndexName")
    found = None if schema is None or index is None else schema.index(str(index))
    hash_key = found.keys[0][0] if found is not None else schema.hash_key if schema is not None else ""
    if not partition or not hash_key:  # a Scan, or a legacy KeyConditions: the table
        return Scope(table=table)

    def in_partition(change: Change) -> bool:
        images = (change.key,) if found is None else (change.before, change.after)
        return any(
            image is not None and hash_key in image and _canonical(image[hash_key]) == partition for image in images
        )

    return Scope(table=table, test=in_partition)


def _canonical(value: Mapping[str, Any]) -> str:
    try:
        return canonical(dict(value))
    except (ValueError, TypeError):  # not a key value (an attribute of another type): no partition
        return ""


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


__all__ = ["HEADER", "add_left", "all_left", "asked", "check", "left_field", "none", "page_key", "scope", "split_last"]
