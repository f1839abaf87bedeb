"""DescribeTimeToLive: the table must exist (moto answers any name); moto describes its TTL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checks.request import table_schema
from ..wire.decode import Request
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def existing_table(store: MotoStore, request: Request) -> Response | None:
    """The request's TableName names an existing table ("Requested resource not found" otherwise); moto answers."""
    table_schema(store.schema_of(request.account, request.region), request.params["TableName"])
    return None


STEPS = Steps(answer=existing_table)

__all__ = ["STEPS", "existing_table"]
