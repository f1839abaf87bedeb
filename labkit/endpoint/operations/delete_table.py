"""DeleteTable: moto deletes the table; a global table's replica deleted this way leaves the global
table (the developer guide: "You can delete a global table's replica table the same way you delete a
regular table"), and the pending deliveries to it are dropped (decision 180)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...shared.catalogue import Op
from ..store.arns import table_of_arn
from ..store.deliveries import Group
from ..wire.decode import Request
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def _answer(store: MotoStore, request: Request) -> Response | None:
    replication = store.replication
    if not replication.groups:
        return None
    table = str(request.params.get("TableName", ""))
    if table.startswith("arn:"):
        table = table_of_arn(Op.DELETE_TABLE, table, request.account, request.region)
    group = replication.group(request.account, request.region, table)
    if group is None:
        return None
    answered = store.dispatch(request)
    if answered[0] == 200:
        left = [r for r in group.regions if r != request.region]
        replication.set_group(request.account, table, Group(left, group.consistency, group.witness))
    return answered


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
