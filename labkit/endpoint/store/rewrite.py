"""What moto is given, and what the client gets back.

The engine evaluates conditions, filters and projections itself
(:mod:`labkit.endpoint.expressions.evaluate`), so moto sees a request without
``ConditionExpression``, ``FilterExpression`` and ``ProjectionExpression``, and only the
placeholders its remaining expressions (``UpdateExpression``, ``KeyConditionExpression``) use.
Its answers are then projected here. Parsed expressions come from validation
(:attr:`labkit.endpoint.plan.Plan.parsed`), keyed by the parameter dict they belong to. Each
operation's module says where its parameter scopes are (the request, each transaction action,
each BatchGetItem table) with these functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expressions.evaluate import project
from ..expressions.syntax import Parsed
from ..plan import ParsedOf

_ENGINE_ONLY = frozenset({"ConditionExpression", "FilterExpression", "ProjectionExpression"})
_MOTO_EXPRESSIONS = ("UpdateExpression", "KeyConditionExpression")


def for_moto(params: Mapping[str, Any], parsed: Mapping[str, Parsed]) -> dict[str, Any]:
    """One parameter scope without the expressions the engine evaluates, and their placeholders (a copy)."""
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


def request_for_moto(params: Mapping[str, Any], parsed_of: ParsedOf) -> dict[str, Any]:
    """The request moto applies, for a request that is one scope (``params`` is left as it is)."""
    return for_moto(params, parsed_of(params))


def actions_for_moto(params: Mapping[str, Any], parsed_of: ParsedOf) -> dict[str, Any]:
    """The transaction moto applies: each action of ``TransactItems`` is a scope of its own."""
    actions = []
    for action in params["TransactItems"]:
        actions.append({kind: for_moto(body, parsed_of(body)) for kind, body in action.items() if body is not None})
    return {**params, "TransactItems": actions}


def projected(item: Any, scope: Mapping[str, Any], parsed_of: ParsedOf) -> Any:
    """``item`` with the scope's ProjectionExpression applied (as it is if there is none)."""
    found = parsed_of(scope).get("ProjectionExpression")
    if found is None or not isinstance(item, Mapping):
        return item
    return project(item, found.paths, scope.get("ExpressionAttributeNames"))


def items_projected(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    """A Query's or Scan's ``Items``, projected in place."""
    if "Items" in payload:
        payload["Items"] = [projected(item, params, parsed_of) for item in payload["Items"]]


def unchanged(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    """moto's answer as it is (an operation that projects nothing)."""


__all__ = ["actions_for_moto", "for_moto", "items_projected", "projected", "request_for_moto", "unchanged"]
