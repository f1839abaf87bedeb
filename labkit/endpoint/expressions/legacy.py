"""DynamoDB's legacy parameters, served by translating them into expressions.

``AttributesToGet``, ``Expected`` (``Exists``, ``Value``, ``ComparisonOperator`` +
``AttributeValueList``) with ``ConditionalOperator``, ``AttributeUpdates`` (PUT, ADD, DELETE),
``KeyConditions``, ``QueryFilter`` and ``ScanFilter`` ("Legacy conditional parameters" in the
DynamoDB Developer Guide) become ``ProjectionExpression``, ``ConditionExpression``,
``UpdateExpression``, ``KeyConditionExpression`` and ``FilterExpression`` with generated
placeholders (``#l0``, ``:l0``: every name is a placeholder, so reserved words are fine), and
the request then takes the expression path. A request that mixes a legacy parameter with an
expression parameter is refused first, in DynamoDB's words; so are the legacy conditions
DynamoDB refuses (wrong number of values, ``Exists`` with ``ComparisonOperator``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ClientFault
from ..values import check_value

#: (legacy, expression) parameters; the legacy ones in the order DynamoDB lists them.
LEGACY = ("AttributesToGet", "AttributeUpdates", "Expected", "KeyConditions", "QueryFilter", "ScanFilter")
EXPRESSIONS = (
    "ProjectionExpression",
    "UpdateExpression",
    "ConditionExpression",
    "KeyConditionExpression",
    "FilterExpression",
)
_CONDITIONS = {"Expected": "ConditionExpression", "QueryFilter": "FilterExpression", "ScanFilter": "FilterExpression"}
_COMPARE = {"EQ": "=", "NE": "<>", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
#: How many values each ComparisonOperator takes (None: one or more).
_ARITY: dict[str, int | None] = {
    **dict.fromkeys(("EQ", "NE", "LE", "LT", "GE", "GT", "CONTAINS", "NOT_CONTAINS", "BEGINS_WITH"), 1),
    "NULL": 0,
    "NOT_NULL": 0,
    "IN": None,
    "BETWEEN": 2,
}
#: The value types each ComparisonOperator takes (the rest take any type).
_SCALARS = {
    **dict.fromkeys(("LE", "LT", "GE", "GT", "BETWEEN", "IN", "CONTAINS", "NOT_CONTAINS"), ("N", "S", "B")),
    "BEGINS_WITH": ("S", "B"),
}
#: Each ComparisonOperator as an expression: {0} the attribute's placeholder, {1} and {2} its values.
_TEMPLATES = {
    **{operator: f"{{0}} {symbol} {{1}}" for operator, symbol in _COMPARE.items()},
    "NULL": "attribute_not_exists({0})",
    "NOT_NULL": "attribute_exists({0})",
    "CONTAINS": "contains({0}, {1})",
    "NOT_CONTAINS": "attribute_exists({0}) AND NOT contains({0}, {1})",
    "BEGINS_WITH": "begins_with({0}, {1})",
    "BETWEEN": "{0} BETWEEN {1} AND {2}",
}
_KEY_OPERATORS = frozenset({"EQ", "LE", "LT", "GE", "GT", "BEGINS_WITH", "BETWEEN"})


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", f"One or more parameter values were invalid: {message}")


def check_mixing(params: Mapping[str, Any]) -> None:
    """Legacy and expression parameters may not meet in one request (DynamoDB's message names both)."""
    legacy = [p for p in (*LEGACY, "ConditionalOperator") if params.get(p) is not None]
    modern = [p for p in EXPRESSIONS if params.get(p) is not None]
    if legacy and modern:
        raise ClientFault(
            "ValidationException",
            "Can not use both expression and non-expression parameters in the same request: "
            f"Non-expression parameters: {{{', '.join(legacy)}}} Expression parameters: {{{', '.join(modern)}}}",
        )
    if legacy:
        for kind in ("Names", "Values"):
            if params.get(f"ExpressionAttribute{kind}") is not None:
                raise ClientFault(
                    "ValidationException", f"ExpressionAttribute{kind} can only be specified when using expressions"
                )


class Placeholders:
    """ExpressionAttributeNames and ExpressionAttributeValues for expressions the engine writes
    (``#l0``, ``:l0`` with prefix ``l``): one name placeholder per attribute name."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        for placeholder, known in self.names.items():
            if known == attribute:
                return placeholder
        placeholder = f"#{self.prefix}{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def add_value(self, value: Any) -> str:
        placeholder = f":{self.prefix}{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def attach(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the placeholders used so far."""
        if self.names:
            params["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            params["ExpressionAttributeValues"] = dict(self.values)
        return params


class _Builder(Placeholders):
    """Placeholders for one request's translated legacy parameters (values checked as written)."""

    def __init__(self) -> None:
        super().__init__("l")

    def value(self, value: Any) -> str:
        check_value(value)
        return self.add_value(value)


def _values(attribute: str, condition: Mapping[str, Any]) -> list[Any]:
    values = condition.get("AttributeValueList")
    if values is not None and condition.get("Value") is not None:
        raise _invalid(f"Value and AttributeValueList cannot be used together for Attribute: {attribute}")
    if values is None:
        return [] if condition.get("Value") is None else [condition["Value"]]
    return list(values)


def _comparison(build: _Builder, attribute: str, operator: str, values: list[Any]) -> str:
    arity = _ARITY.get(operator, -1)
    if arity == -1 or (arity is None and not values) or (arity is not None and len(values) != arity):
        raise _invalid(f"Invalid number of argument(s) for the {operator} ComparisonOperator")
    allowed = _SCALARS.get(operator)
    for value in values:
        kind = next(iter(value), "") if isinstance(value, dict) and len(value) == 1 else ""
        if allowed and kind and kind not in allowed:
            raise _invalid(f"ComparisonOperator {operator} is not valid for {kind} AttributeValue type")
    path, placeholders = build.name(attribute), [build.value(v) for v in values]
    if operator == "IN":
        return f"{path} IN ({', '.join(placeholders)})"
    return _TEMPLATES[operator].format(path, *placeholders)


def _condition(build: _Builder, attribute: str, condition: Mapping[str, Any], expected: bool) -> str:
    """One attribute's legacy condition as an expression (``expected``: an ``Expected`` entry, which may use Exists)."""
    operator = condition.get("ComparisonOperator")
    if operator is not None:
        if expected and condition.get("Exists") is not None:
            raise _invalid(f"Exists and ComparisonOperator cannot be used together for Attribute: {attribute}")
        return _comparison(build, attribute, str(operator), _values(attribute, condition))
    if condition.get("AttributeValueList") is not None:
        raise _invalid(f"AttributeValueList can only be used with a ComparisonOperator for Attribute: {attribute}")
    if not expected:
        raise _invalid(f"ComparisonOperator must be specified for Attribute: {attribute}")
    exists = condition.get("Exists")
    value = condition.get("Value")
    if exists is None or exists:
        if value is None:
            shown = "null" if exists is None else "true"
            raise _invalid(f"Value must be provided when Exists is {shown} for Attribute: {attribute}")
        return f"{build.name(attribute)} = {build.value(value)}"
    if value is not None:
        raise _invalid(f"Value cannot be used when Exists is false for Attribute: {attribute}")
    return f"attribute_not_exists({build.name(attribute)})"


def _conditions(build: _Builder, conditions: Mapping[str, Any], joiner: str, expected: bool) -> str:
    parts = [_condition(build, attribute, c, expected) for attribute, c in conditions.items()]
    return f" {joiner} ".join(f"({p})" if len(parts) > 1 else p for p in parts)


def _updates(build: _Builder, updates: Mapping[str, Any]) -> str:
    clauses: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    for attribute, update in updates.items():
        action = update.get("Action") or "PUT"
        value = update.get("Value")
        path = build.name(attribute)
        if action == "PUT":
            if value is None:
                raise _invalid(f"Only DELETE action is allowed when no attribute value is specified: {attribute}")
            clauses["SET"].append(f"{path} = {build.value(value)}")
        elif action == "ADD":
            if value is None:
                raise _invalid(f"Only DELETE action is allowed when no attribute value is specified: {attribute}")
            clauses["ADD"].append(f"{path} {build.value(value)}")
        elif value is None:
            clauses["REMOVE"].append(path)
        else:
            clauses["DELETE"].append(f"{path} {build.value(value)}")
    return " ".join(f"{clause} {', '.join(actions)}" for clause, actions in clauses.items() if actions)


def translate(operation: str, params: dict[str, Any]) -> None:
    """Replace the legacy parameters of ``params`` (one request, or one BatchGetItem table) by expressions, in place."""
    check_mixing(params)
    if not any(params.get(p) is not None for p in (*LEGACY, "ConditionalOperator")):
        return
    build = _Builder()
    joiner = str(params.pop("ConditionalOperator", None) or "AND")
    attributes = params.pop("AttributesToGet", None)
    if attributes is not None:
        params["ProjectionExpression"] = ", ".join(build.name(a) for a in attributes)
    keys = params.pop("KeyConditions", None)
    if keys is not None:
        for condition in keys.values():
            if condition.get("ComparisonOperator") not in _KEY_OPERATORS:
                raise _invalid(f"Unsupported operator on KeyCondition: {condition.get('ComparisonOperator')}")
        params["KeyConditionExpression"] = _conditions(build, keys, "AND", expected=False)
    for legacy, expression in _CONDITIONS.items():
        conditions = params.pop(legacy, None)
        if conditions:
            params[expression] = _conditions(build, conditions, joiner, expected=legacy == "Expected")
    updates = params.pop("AttributeUpdates", None)
    if updates:
        params["UpdateExpression"] = _updates(build, updates)
    build.attach(params)


__all__ = ["EXPRESSIONS", "LEGACY", "Placeholders", "check_mixing", "translate"]
