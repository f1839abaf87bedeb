"""DescribeContributorInsights: whether CloudWatch Contributor Insights is on for a table or one of
its global secondary indexes — answered here (moto has no such operation).

DynamoDB API reference, DescribeContributorInsights: it "Returns information about contributor
insights for a given table or global secondary index"; ``TableName`` — "You can also provide the
Amazon Resource Name (ARN) of the table"; ``ContributorInsightsStatus`` — "Current status of
contributor insights", one of ``ENABLING | ENABLED | DISABLING | DISABLED | FAILED``;
``ResourceNotFoundException`` — "The operation tried to access a nonexistent table or index".
Contributor Insights is off until someone enables it, and nothing here can (the engine has no
CloudWatch and does not serve UpdateContributorInsights), so every table and global secondary
index is ``DISABLED``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..checks.request import table_schema
from ..errors import ClientFault
from ..store.arns import table_of_arn
from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore

DISABLED = "DISABLED"


def _answer(store: MotoStore, request: Request) -> Response | None:
    params, who = request.params, (request.account, request.region)
    name = str(params["TableName"])
    if name.startswith("arn:"):
        name = table_of_arn(request.operation, name, *who)
    schema = table_schema(store.schema_of(*who), name)
    answer: dict[str, Any] = {"TableName": name}
    index_name = params.get("IndexName")
    if index_name is not None:
        index = schema.index(index_name)
        if index is None or index.local:  # Contributor Insights covers a table and its global secondary indexes
            raise ClientFault("ResourceNotFoundException", "Requested resource not found")
        answer["IndexName"] = index_name
    answer["ContributorInsightsStatus"] = DISABLED
    return response(200, answer)


STEPS = Steps(answer=_answer)

__all__ = ["DISABLED", "STEPS"]
