"""ExecuteStatement: one PartiQL statement, run as the request it stands for (a SELECT as a Query,
Scan or GetItem; INSERT, UPDATE, DELETE as a PutItem, UpdateItem, DeleteItem); ``Items`` and
``NextToken`` as PartiQL answers them (API reference: ExecuteStatement)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ...shared.catalogue import WHOLE_TABLE
from ..errors import ClientFault
from ..partiql.run import run_statement
from ..partiql.syntax import parse
from ..partiql.translate import Run, projected, translate
from ..schema import SchemaOf
from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps


def _token(value: Any) -> dict[str, Any]:
    """The ExclusiveStartKey a NextToken stands for."""
    try:
        key = json.loads(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError) as exc:
        raise ClientFault("ValidationException", "Invalid NextToken") from exc
    if not isinstance(key, dict):
        raise ClientFault("ValidationException", "Invalid NextToken")
    return key


def _execute(request: Request, run: Run, schema_of: SchemaOf) -> Response:
    params = request.params
    stmt = parse(params["Statement"])
    operation, sub = translate(stmt, list(params.get("Parameters") or []), schema_of)
    if params.get("ReturnConsumedCapacity") is not None:
        sub["ReturnConsumedCapacity"] = params["ReturnConsumedCapacity"]
    if params.get("ReturnValuesOnConditionCheckFailure") is not None and operation not in WHOLE_TABLE:
        sub["ReturnValuesOnConditionCheckFailure"] = params["ReturnValuesOnConditionCheckFailure"]
    if operation in WHOLE_TABLE:
        if params.get("ConsistentRead"):
            schema = schema_of(stmt.table)
            index = schema.index(stmt.index) if schema is not None and stmt.index else None
            if index is not None and not index.local:
                raise ClientFault(
                    "ValidationException", "Strongly consistent read is not supported on Global Secondary Indexes"
                )
            sub["ConsistentRead"] = True
        if params.get("Limit") is not None:
            sub["Limit"] = params["Limit"]
        if params.get("NextToken") is not None:
            sub["ExclusiveStartKey"] = _token(params["NextToken"])
    answer = run_statement(run, request, stmt, operation, sub)
    out: dict[str, Any] = {}
    if operation in WHOLE_TABLE:
        out["Items"] = [projected(item, stmt.projection) for item in answer.get("Items", [])]
        if "LastEvaluatedKey" in answer:
            out["NextToken"] = base64.b64encode(json.dumps(answer["LastEvaluatedKey"]).encode()).decode("ascii")
    elif stmt.returning is not None:
        out["Items"] = [answer["Attributes"]] if answer.get("Attributes") else []
    if "ConsumedCapacity" in answer:
        out["ConsumedCapacity"] = answer["ConsumedCapacity"]
    return response(200, out)


STEPS = Steps(execute=_execute)

__all__ = ["STEPS"]
