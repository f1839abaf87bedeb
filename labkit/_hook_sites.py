"""Which partitions a request reads and writes, for engine hooks (a stand-in for the new engine).

Private to the old :mod:`labkit.endpoint`; the engine package computes :class:`RequestInfo` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._metering import partition_value
from .endpoint_hooks import RequestInfo


def request_info(core: Any, who: tuple[str, str], operation: str, params: Mapping[str, Any]) -> RequestInfo:
    reads: list[tuple[str, str]] = []
    writes: list[tuple[str, str]] = []

    def add(into: list[tuple[str, str]], table: str, key: Any) -> None:
        pk = partition_value(core, who, table, key)
        if pk is not None and (table, pk) not in into:
            into.append((table, pk))

    p = params
    if operation == "GetItem":
        add(reads, p["TableName"], p.get("Key"))
    elif operation == "PutItem":
        add(writes, p["TableName"], p.get("Item"))
    elif operation in ("UpdateItem", "DeleteItem"):
        add(writes, p["TableName"], p.get("Key"))
    elif operation == "BatchGetItem":
        for table, request in p.get("RequestItems", {}).items():
            for key in request.get("Keys", []):
                add(reads, table, key)
    elif operation == "BatchWriteItem":
        for table, requests in p.get("RequestItems", {}).items():
            for request in requests:
                body = request.get("PutRequest", {}).get("Item") or request.get("DeleteRequest", {}).get("Key")
                add(writes, table, body)
    elif operation in ("TransactGetItems", "TransactWriteItems"):
        for action in p.get("TransactItems", []):
            ((kind, body),) = action.items()
            target = reads if kind in ("Get", "ConditionCheck") else writes
            add(target, body["TableName"], body.get("Key") or body.get("Item"))
    account, region = who
    return RequestInfo(operation, account, region, tuple(reads), tuple(writes), params)
