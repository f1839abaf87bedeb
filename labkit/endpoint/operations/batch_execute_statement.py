"""BatchExecuteStatement: up to 25 PartiQL statements, each run on its own (reads as GetItems by
the full key); a failed one answered in its place with an ``Error`` (API reference:
BatchExecuteStatement)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...shared.catalogue import Op
from ..errors import ClientFault
from ..partiql.run import run_statement
from ..partiql.syntax import parse
from ..partiql.translate import Run, translate
from ..schema import SchemaOf
from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps

#: A statement's error code in its Responses entry (DynamoDB's BatchStatementErrorCodeEnum).
_CODES = {
    "ValidationException": "ValidationError",
    "ResourceNotFoundException": "ResourceNotFound",
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "DuplicateItemException": "DuplicateItem",
}


def _execute(request: Request, run: Run, schema_of: SchemaOf) -> Response:
    responses: list[dict[str, Any]] = []
    capacity: dict[str, float] = {}
    wanted = request.params.get("ReturnConsumedCapacity")
    for entry in request.params["Statements"]:
        table: str | None = None
        try:
            stmt = parse(entry["Statement"])
            table = stmt.table
            operation, sub = translate(stmt, list(entry.get("Parameters") or []), schema_of, batch=True)
            if entry.get("ConsistentRead") and operation == Op.GET_ITEM:
                sub["ConsistentRead"] = True
            if wanted in ("TOTAL", "INDEXES"):
                sub["ReturnConsumedCapacity"] = "TOTAL"
            answer = run_statement(run, request, stmt, operation, sub)
        except ClientFault as fault:
            error = {"Code": _CODES.get(fault.code, fault.code.removesuffix("Exception")), "Message": fault.message}
            responses.append({"Error": error, **({"TableName": table} if table else {})})
            continue
        used = answer.get("ConsumedCapacity")
        if isinstance(used, Mapping):
            capacity[table] = capacity.get(table, 0.0) + float(used.get("CapacityUnits", 0))
        item = answer.get("Item") if operation == Op.GET_ITEM else answer.get("Attributes")
        responses.append({"TableName": table, **({"Item": item} if item else {})})
    out: dict[str, Any] = {"Responses": responses}
    if wanted in ("TOTAL", "INDEXES"):
        out["ConsumedCapacity"] = [{"TableName": t, "CapacityUnits": units} for t, units in capacity.items()]
    return response(200, out)


STEPS = Steps(execute=_execute)

__all__ = ["STEPS"]
