"""Answers to ExecuteStatement, BatchExecuteStatement and ExecuteTransaction.

Each statement is translated (:func:`labkit.endpoint.statements.translate`) and run through the
engine as an ordinary request (``run``: the engine's own request path, under its lock), so it is
validated, seen by hooks, applied atomically and metered like any other. Answers take PartiQL's
shapes: ``Items`` (and ``NextToken``) for ExecuteStatement, one ``Responses`` entry per statement
(an ``Error`` in place of a failed one) for BatchExecuteStatement, and one transaction for
ExecuteTransaction (API reference: ExecuteStatement, BatchExecuteStatement, ExecuteTransaction).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from ..operations import ACTION_OF, WHOLE_TABLE, Op
from .decode import Request
from .encode import ClientFault, Response, cancelled, response
from .partiql import Statement, parse
from .statements import DUPLICATE, Run, SchemaOf, projected, translate

_EXPRESSION_LABEL = re.compile(r"^Invalid (?:Filter|Condition|KeyCondition|Update|Projection)Expression: ")
_CODES = {
    "ValidationException": "ValidationError",
    "ResourceNotFoundException": "ResourceNotFound",
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "DuplicateItemException": "DuplicateItem",
}


def _call(run: Run, request: Request, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one translated request through the engine; its answer, or its error as a ClientFault."""
    headers = {k: v for k, v in request.headers.items() if k != "content-encoding"}
    headers["x-amz-target"] = f"DynamoDB_20120810.{operation}"
    body = json.dumps(params).encode("utf-8")
    try:
        status, _, answer = run(
            Request(request.service, operation, params, request.account, request.region, headers, body)
        )
        data: dict[str, Any] = json.loads(answer or b"{}")
        if status != 200:
            code = str(data.pop("__type", "ValidationException")).rpartition("#")[2]
            message = str(data.pop("message", data.pop("Message", "")))
            raise ClientFault(code, message, status, data)
    except ClientFault as fault:
        if fault.code == "ValidationException":  # PartiQL names no expression: DynamoDB's message starts after it
            fault.message = _EXPRESSION_LABEL.sub("", fault.message, count=1)
        raise
    return data


def _token(value: Any) -> dict[str, Any]:
    """The ExclusiveStartKey a NextToken stands for."""
    try:
        key = json.loads(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError) as exc:
        raise ClientFault("ValidationException", "Invalid NextToken") from exc
    if not isinstance(key, dict):
        raise ClientFault("ValidationException", "Invalid NextToken")
    return key


def _statement(run: Run, request: Request, schema_of: SchemaOf) -> dict[str, Any]:
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
    answer = _run_statement(run, request, stmt, operation, sub)
    out: dict[str, Any] = {}
    if operation in WHOLE_TABLE:
        out["Items"] = [projected(item, stmt.projection) for item in answer.get("Items", [])]
        if "LastEvaluatedKey" in answer:
            out["NextToken"] = base64.b64encode(json.dumps(answer["LastEvaluatedKey"]).encode()).decode("ascii")
    elif stmt.returning is not None:
        out["Items"] = [answer["Attributes"]] if answer.get("Attributes") else []
    if "ConsumedCapacity" in answer:
        out["ConsumedCapacity"] = answer["ConsumedCapacity"]
    return out


def _run_statement(run: Run, request: Request, stmt: Statement, operation: str, sub: dict[str, Any]) -> dict[str, Any]:
    try:
        return _call(run, request, operation, sub)
    except ClientFault as fault:
        if stmt.kind == "INSERT" and fault.code == "ConditionalCheckFailedException":
            raise ClientFault("DuplicateItemException", DUPLICATE) from fault
        raise


def _batch(run: Run, request: Request, schema_of: SchemaOf) -> dict[str, Any]:
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
            answer = _run_statement(run, request, stmt, operation, sub)
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
    return out


def _transaction(run: Run, request: Request, schema_of: SchemaOf) -> dict[str, Any]:
    params = request.params
    parsed: list[Statement] = []
    for i, entry in enumerate(params["TransactStatements"]):
        stmt = parse(entry["Statement"])
        if stmt.returning is not None:
            raise _in_statement(i, "RETURNING clause is not supported in ExecuteTransaction.")
        if stmt.kind == "SELECT" and stmt.index is not None:
            raise _in_statement(i, "Reads on indices are not supported within transactions.")
        parsed.append(stmt)
    reads = [s.kind == "SELECT" for s in parsed]
    if any(reads) and not all(reads):
        raise _in_statement(reads.index(True), "Transactions with both reads and writes are not supported.")
    actions = []
    for stmt, entry in zip(parsed, params["TransactStatements"], strict=True):
        operation, sub = translate(stmt, list(entry.get("Parameters") or []), schema_of, batch=all(reads))
        sub.pop("ReturnValues", None)
        actions.append({ACTION_OF[operation]: sub})
    outer: dict[str, Any] = {"TransactItems": actions}
    for name in ("ClientRequestToken", "ReturnConsumedCapacity"):
        if params.get(name) is not None and not (name == "ClientRequestToken" and all(reads)):
            outer[name] = params[name]
    try:
        answer = _call(run, request, Op.TRANSACT_GET_ITEMS if all(reads) else Op.TRANSACT_WRITE_ITEMS, outer)
    except ClientFault as fault:
        reasons = fault.extra.get("CancellationReasons")
        if fault.code != "TransactionCanceledException" or not isinstance(reasons, list):
            raise
        raise cancelled(
            [
                ("DuplicateItem", DUPLICATE, None)
                if stmt.kind == "INSERT" and reason.get("Code") == "ConditionalCheckFailed"
                else (None, None, None)
                if reason.get("Code") in (None, "None")
                else (reason.get("Code"), reason.get("Message"), reason.get("Item"))
                for stmt, reason in zip(parsed, reasons, strict=False)
            ]
        ) from fault
    out: dict[str, Any] = {}
    if all(reads):
        out["Responses"] = [
            {"Item": projected(r["Item"], stmt.projection)} if r.get("Item") else {}
            for stmt, r in zip(parsed, answer.get("Responses", []), strict=False)
        ]
    if "ConsumedCapacity" in answer:
        out["ConsumedCapacity"] = answer["ConsumedCapacity"]
    return out


def _in_statement(index: int, message: str) -> ClientFault:
    return ClientFault("ValidationException", f"Validation failed in TransactStatements[{index}]: {message}")


def execute(request: Request, run: Run, schema_of: SchemaOf) -> Response:
    """Answer one ExecuteStatement, BatchExecuteStatement or ExecuteTransaction (ClientFault for an error)."""
    if request.operation == Op.EXECUTE_STATEMENT:
        return response(200, _statement(run, request, schema_of))
    if request.operation == Op.BATCH_EXECUTE_STATEMENT:
        return response(200, _batch(run, request, schema_of))
    return response(200, _transaction(run, request, schema_of))


__all__ = ["execute"]
