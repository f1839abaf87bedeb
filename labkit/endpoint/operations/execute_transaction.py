"""ExecuteTransaction: up to 100 PartiQL statements as one TransactWriteItems (or, all reads, one
TransactGetItems), so a duplicate INSERT cancels them all with reason ``DuplicateItem`` (API
reference: ExecuteTransaction); an ``EXISTS(SELECT ...)`` is a ConditionCheck among the writes."""

from __future__ import annotations

from typing import Any

from ...shared.catalogue import ACTION_OF, Op
from ..errors import ClientFault, cancelled
from ..partiql.run import call
from ..partiql.syntax import Statement, parse
from ..partiql.translate import DUPLICATE, Run, condition_check, projected, translate
from ..schema import SchemaOf
from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps


def _in_statement(index: int, message: str) -> ClientFault:
    return ClientFault("ValidationException", f"Validation failed in TransactStatements[{index}]: {message}")


def _execute(request: Request, run: Run, schema_of: SchemaOf) -> Response:
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
    actions: list[dict[str, Any]] = []
    for stmt, entry in zip(parsed, params["TransactStatements"], strict=True):
        if stmt.kind == "EXISTS":  # a ConditionCheck (developer guide: ql-functions.exists)
            actions.append({"ConditionCheck": condition_check(stmt, list(entry.get("Parameters") or []), schema_of)})
            continue
        operation, sub = translate(stmt, list(entry.get("Parameters") or []), schema_of, batch=all(reads))
        sub.pop("ReturnValues", None)
        actions.append({ACTION_OF[operation]: sub})
    outer: dict[str, Any] = {"TransactItems": actions}
    for name in ("ClientRequestToken", "ReturnConsumedCapacity"):
        if params.get(name) is not None and not (name == "ClientRequestToken" and all(reads)):
            outer[name] = params[name]
    try:
        answer = call(run, request, Op.TRANSACT_GET_ITEMS if all(reads) else Op.TRANSACT_WRITE_ITEMS, outer)
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
    return response(200, out)


STEPS = Steps(execute=_execute)

__all__ = ["STEPS"]
