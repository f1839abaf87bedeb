"""DescribeTable: moto's answer, plus what a global table's description says of its replicas
(``Replicas``, ``GlobalTableVersion``, ``MultiRegionConsistency``, ``GlobalTableWitnesses``), which moto
does not keep (:mod:`labkit.endpoint.store.replication`). A regional table's answer is moto's as it is.

moto's answer goes through its whole request machinery (a werkzeug request, its model-driven serializer):
1.4 ms of CPU, a test's most frequent control-plane call (every waiter asks it). The body is a function
of the table's ``describe()`` alone, so a regional table's body is kept on moto's table object beside
that description and given again while the description is the same (decision 234); the differential
test asks both ways after every change it makes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..wire.decode import Request
from ..wire.encode import headers_for, response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


#: The attribute of moto's table object that keeps its last answer: (its description's repr, the body).
KEPT = "_labkit_described"


def _kept(store: MotoStore, request: Request) -> Response:
    """moto's answer, or its body again while the table's description is the one it was given for."""
    name = request.params.get("TableName")
    table: Any = store.table_object(request.account, request.region, name) if isinstance(name, str) else None
    if table is None:  # no such table, or named by its ARN: moto says what it says
        return store.dispatch(request)
    seen = repr(table.describe(base_key="Table"))
    kept = getattr(table, KEPT, None)
    if kept is not None and kept[0] == seen:
        return 200, headers_for(kept[1]), kept[1]
    status, headers, body = store.dispatch(request)
    if status == 200:
        setattr(table, KEPT, (seen, body))
    return status, headers, body


def _answer(store: MotoStore, request: Request) -> Response | None:
    if not store.replication.groups:
        return _kept(store, request)
    status, headers, body = store.dispatch(request)
    if status != 200:
        return status, headers, body
    payload = json.loads(body or b"{}")
    table = payload.get("Table") or {}
    store.replication.describe(request.account, request.region, str(table.get("TableName", "")), table)
    return response(200, payload)


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
