"""The whole request, checked as DynamoDB checks it, before anything is written.

:func:`validate` checks the request against botocore's model (:mod:`.shapes`), then runs the
operation's own check (its module in :mod:`labkit.endpoint.operations`), which fills a
:class:`~labkit.endpoint.plan.Plan`; the first problem raises
:class:`~labkit.endpoint.errors.ClientFault`. A batch or transaction is checked in full first, so
a bad element writes nothing. The checks several operations share are here: a parameter scope's
expressions (:func:`parse_scope`), the table (:func:`table_schema`), the index a read names,
``Select``, ``ExclusiveStartKey``, the keys an UpdateExpression may not touch. Messages use
DynamoDB's wording where it is documented or known.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ClientFault, invalid
from ..expressions import syntax as X
from ..expressions.semantics import check_condition
from ..expressions.updates import update as parse_update
from ..plan import Plan, Target
from ..schema import SchemaOf, TableSchema
from ..values import check_value
from .items import check_key
from .shapes import check_request

if TYPE_CHECKING:
    from ..wire.decode import Request

#: An operation's own check: (the request, its tables' schemas, the plan to fill) -> None or ClientFault.
Check = Callable[["Request", SchemaOf, Plan], None]

_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "FilterExpression",
    "KeyConditionExpression",
)


def table_schema(schema_of: SchemaOf, table: str) -> TableSchema:
    """The table's schema, or DynamoDB's answer for a table that does not exist."""
    schema = schema_of(table)
    if schema is None:
        raise ClientFault("ResourceNotFoundException", "Requested resource not found")
    return schema


def parse_scope(scope: Mapping[str, Any], plan: Plan) -> dict[str, X.Parsed]:
    """Parse every expression of one parameter scope; check placeholders are defined and all used.

    A scope is the request, one action of a transaction, or one table of a BatchGetItem; what
    is parsed is kept in ``plan`` for the stages after validation.
    """
    names, values = scope.get("ExpressionAttributeNames"), scope.get("ExpressionAttributeValues")
    parsed: dict[str, X.Parsed] = {}
    if names is None and values is None and not any(label in scope for label in _EXPRESSIONS):
        return parsed
    for label in _EXPRESSIONS:
        text = scope.get(label)
        if text is None:
            continue
        if label == "UpdateExpression":
            parsed[label], targets = parse_update(text)
            parsed[label].paths = tuple(targets)
        elif label == "KeyConditionExpression":
            parsed[label] = X.key_condition(text)
        elif label == "ProjectionExpression":
            parsed[label] = X.projection(text)
        else:
            parsed[label] = X.condition(label, text)
        X.check_placeholders(label, parsed[label], names, values)
        check_condition(label, parsed[label], names, values)
    for kind, given in (("Names", names), ("Values", values)):
        if given is None:
            continue
        if not given:
            raise invalid(f"ExpressionAttribute{kind} must not be empty")
        if not parsed:
            raise invalid(f"ExpressionAttribute{kind} can only be specified when using expressions")
        used = set().union(*((p.names if kind == "Names" else p.values) for p in parsed.values()))
        unused = [k for k in given if k not in used]
        if unused:
            raise invalid(
                f"Value provided in ExpressionAttribute{kind} unused in expressions: keys: {{{', '.join(unused)}}}"
            )
    for name, value in (values or {}).items():
        try:
            check_value(value)
        except ClientFault as fault:
            fault.message = f"ExpressionAttributeValues contains invalid value: {fault.message} for key {name}"
            raise
    plan.parsed[id(scope)] = parsed
    return parsed


def on_table(
    params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan
) -> tuple[str, TableSchema, dict[str, X.Parsed]]:
    """The first checks of a request (or action) on one table: its expressions, then the table."""
    table = params["TableName"]
    parsed = parse_scope(params, plan)
    return table, table_schema(schema_of, table), parsed


def index_keys(schema: TableSchema, params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The key of the table, or of the index a Query or Scan names (which must exist; a GSI reads eventually)."""
    index_name = params.get("IndexName")
    if index_name is None:
        return schema.keys
    index = schema.index(index_name)
    if index is None:
        raise invalid(f"The table does not have the specified index: {index_name}")
    if params.get("ConsistentRead") and not index.local:
        raise invalid("Consistent reads are not supported on global secondary indexes")
    return index.keys


def check_update_targets(schema: TableSchema, params: Mapping[str, Any], parsed: dict[str, X.Parsed]) -> None:
    """An UpdateExpression may not change a key attribute."""
    update = parsed.get("UpdateExpression")
    if update is None:
        return
    names = params.get("ExpressionAttributeNames") or {}
    for target in update.paths:
        first = str(target.parts[0])
        name = names.get(first, first)
        if name in schema.key_names:
            raise invalid(
                f"One or more parameter values were invalid: Cannot update attribute {name}. "
                "This attribute is part of the key"
            )


def check_keyed_write(
    params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan, transactional: bool = False, check_only: bool = False
) -> None:
    """A write of one item named by its ``Key`` — UpdateItem, DeleteItem, a transaction's Update and
    Delete — or a transaction's ConditionCheck (``check_only``): the key, and the attributes an
    UpdateExpression may not touch."""
    table, schema, parsed = on_table(params, schema_of, plan)
    pk = check_key(schema, params["Key"])
    check_update_targets(schema, params, parsed)
    plan.writes.append(Target(table, dict(params["Key"]), pk, transactional, check_only=check_only))


def check_select(params: Mapping[str, Any]) -> None:
    """Select=SPECIFIC_ATTRIBUTES needs a projection (the engine projects; moto never sees it)."""
    if params.get("Select") == "SPECIFIC_ATTRIBUTES" and params.get("ProjectionExpression") is None:
        raise invalid(
            "1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing "
            "to get SPECIFIC_ATTRIBUTES"
        )


def check_start_key(schema: TableSchema, params: Mapping[str, Any]) -> None:
    """ExclusiveStartKey (if given): exactly the table's key (plus the index's key for an index), typed right."""
    start = params.get("ExclusiveStartKey")
    if start is None:
        return
    for value in start.values():
        check_value(value)
    index = schema.index(params["IndexName"]) if params.get("IndexName") else None
    expected = dict(schema.keys) | (dict(index.keys) if index is not None else {})
    if set(start) != set(expected) or any(next(iter(start[k])) != t for k, t in expected.items()):
        raise invalid("The provided starting key is invalid: The provided key element does not match the schema")


def validate(request: Request, schema_of: SchemaOf, check: Check | None) -> Plan:
    """Check ``request`` against botocore's model, then with the operation's own ``check``; return what it touches."""
    check_request(request.service, request.operation, request.params)
    plan = Plan()
    if check is not None:
        check(request, schema_of, plan)
    return plan


__all__ = [
    "Check",
    "check_keyed_write",
    "check_select",
    "check_start_key",
    "check_update_targets",
    "index_keys",
    "on_table",
    "parse_scope",
    "table_schema",
    "validate",
]
