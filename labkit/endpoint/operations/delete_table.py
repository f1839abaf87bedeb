"""DeleteTable: moto deletes the table; a global table's replica deleted this way leaves the global
table (the developer guide: "You can delete a global table's replica table the same way you delete a
regular table"), and the pending deliveries to it are dropped (decision 180).

The answer describes the table as DELETING (API reference: "After a DeleteTable request, the specified
table is in the DELETING state until DynamoDB completes the deletion"; moto answered ACTIVE). The engine
completes the deletion at once: a DescribeTable after it answers ResourceNotFoundException (decision 239)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...shared.catalogue import Op
from ..store.arns import table_of_arn
from ..store.deliveries import Group
from ..wire.decode import Request
from ..wire.encode import response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def _answer(store: MotoStore, request: Request) -> Response | None:
    replication = store.replication
    group = None
    if replication.groups:
        table = str(request.params.get("TableName", ""))
        if table.startswith("arn:"):
            table = table_of_arn(Op.DELETE_TABLE, table, request.account, request.region)
        group = replication.group(request.account, request.region, table)
    answered = store.dispatch(request)
    if answered[0] != 200:
        return answered
    if group is not None:
        left = [r for r in group.regions if r != request.region]
        replication.set_group(request.account, table, Group(left, group.consistency, group.witness))
    payload = json.loads(answered[2])
    payload["TableDescription"]["TableStatus"] = "DELETING"
    return response(200, payload)


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
