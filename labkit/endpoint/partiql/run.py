"""A PartiQL statement run as the DynamoDB request it stands for, through the engine.

Each statement is translated (:func:`labkit.endpoint.partiql.translate.translate`) and run
through the engine as an ordinary request (``run``: the engine's own request path, under its
lock), so it is validated, seen by hooks, applied atomically and metered like any other. The
three PartiQL operations (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction; their
modules in :mod:`labkit.endpoint.operations`) shape the answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...shared.catalogue import DYNAMODB_TARGET
from ..errors import ClientFault
from ..wire.decode import Request
from .syntax import Statement
from .translate import DUPLICATE, Run

_EXPRESSION_LABEL = re.compile(r"^Invalid (?:Filter|Condition|KeyCondition|Update|Projection)Expression: ")


def call(run: Run, request: Request, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one translated request through the engine; its answer, or its error as a ClientFault."""
    headers = {k: v for k, v in request.headers.items() if k != "content-encoding"}
    headers["x-amz-target"] = f"{DYNAMODB_TARGET}.{operation}"
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


def run_statement(run: Run, request: Request, stmt: Statement, operation: str, sub: dict[str, Any]) -> dict[str, Any]:
    """:func:`call`, with a refused INSERT answered as PartiQL answers it (DuplicateItemException)."""
    try:
        return call(run, request, operation, sub)
    except ClientFault as fault:
        if stmt.kind == "INSERT" and fault.code == "ConditionalCheckFailedException":
            raise ClientFault("DuplicateItemException", DUPLICATE) from fault
        raise


__all__ = ["call", "run_statement"]
