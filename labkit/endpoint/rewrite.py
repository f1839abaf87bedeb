"""What moto is given, and what the client gets back.

The engine evaluates conditions, filters and projections itself (:mod:`labkit.endpoint.evaluate`),
so moto sees a request without ``ConditionExpression``, ``FilterExpression`` and
``ProjectionExpression``, and only the placeholders its remaining expressions (``UpdateExpression``,
``KeyConditionExpression``) use. Its answers are then projected here. Parsed expressions come
from validation (:attr:`labkit.endpoint.validate.Plan.parsed`), keyed by the parameter dict
they belong to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..operations import TRANSACTIONS, WHOLE_TABLE, Op
from .evaluate import project
from .expressions import Parsed

ParsedOf = Callable[[Mapping[str, Any]], Mapping[str, Parsed]]
_ENGINE_ONLY = frozenset({"ConditionExpression", "FilterExpression", "ProjectionExpression"})
_MOTO_EXPRESSIONS = ("UpdateExpression", "KeyConditionExpression")


def _scope(params: Mapping[str, Any], parsed: Mapping[str, Parsed]) -> dict[str, Any]:
    """One parameter scope without the expressions the engine evaluates, and their placeholders."""
    out = {k: v for k, v in params.items() if k not in _ENGINE_ONLY}
    if out.get("Select") == "SPECIFIC_ATTRIBUTES":  # moto would want the projection it is not given
        del out["Select"]
    names: set[str] = set()
    values: set[str] = set()
    for label in _MOTO_EXPRESSIONS:
        found = parsed.get(label)
        if found is not None:
            names |= found.names
            values |= found.values
    for key, used in (("ExpressionAttributeNames", names), ("ExpressionAttributeValues", values)):
        given = out.pop(key, None)
        if isinstance(given, Mapping) and used:
            out[key] = {k: v for k, v in given.items() if k in used}
    return out


def for_moto(operation: str, params: Mapping[str, Any], parsed_of: ParsedOf) -> dict[str, Any]:
    """The request moto applies (a copy: ``params`` is left as it is)."""
    if operation in TRANSACTIONS:
        actions = []
        for action in params["TransactItems"]:
            actions.append({kind: _scope(body, parsed_of(body)) for kind, body in action.items() if body is not None})
        return {**params, "TransactItems": actions}
    if operation == Op.BATCH_GET_ITEM:
        requests = {table: _scope(r, parsed_of(r)) for table, r in params["RequestItems"].items()}
        return {**params, "RequestItems": requests}
    return _scope(params, parsed_of(params))


def _projected(item: Any, scope: Mapping[str, Any], parsed_of: ParsedOf) -> Any:
    found = parsed_of(scope).get("ProjectionExpression")
    if found is None or not isinstance(item, Mapping):
        return item
    return project(item, found.paths, scope.get("ExpressionAttributeNames"))


def finish(operation: str, params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    """Apply the request's projections to moto's answer, in place."""
    if operation == Op.GET_ITEM and "Item" in payload:
        payload["Item"] = _projected(payload["Item"], params, parsed_of)
    elif operation in WHOLE_TABLE and "Items" in payload:
        payload["Items"] = [_projected(item, params, parsed_of) for item in payload["Items"]]
    elif operation == Op.BATCH_GET_ITEM:
        for table, items in (payload.get("Responses") or {}).items():
            scope = params["RequestItems"].get(table, {})
            payload["Responses"][table] = [_projected(item, scope, parsed_of) for item in items]
    elif operation == Op.TRANSACT_GET_ITEMS:
        for response, action in zip(payload.get("Responses") or [], params["TransactItems"], strict=False):
            if isinstance(response, dict) and "Item" in response:
                response["Item"] = _projected(response["Item"], action["Get"], parsed_of)


__all__ = ["ParsedOf", "finish", "for_moto"]
