"""DescribeTable: moto's answer, plus what a global table's description says of its replicas
(``Replicas``, ``GlobalTableVersion``, ``MultiRegionConsistency``, ``GlobalTableWitnesses``), which moto
does not keep (:mod:`labkit.endpoint.store.replication`). A regional table's answer is moto's as it is."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..wire.decode import Request
from ..wire.encode import response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def _answer(store: MotoStore, request: Request) -> Response | None:
    if not store.replication.groups:
        return None
    status, headers, body = store.dispatch(request)
    if status != 200:
        return status, headers, body
    payload = json.loads(body or b"{}")
    table = payload.get("Table") or {}
    store.replication.describe(request.account, request.region, str(table.get("TableName", "")), table)
    return response(200, payload)


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
