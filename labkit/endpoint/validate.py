"""The whole request, checked as DynamoDB checks it, before anything is written.

:func:`validate` raises :class:`~labkit.endpoint.encode.ClientFault` for the first problem,
or returns a :class:`Plan`: the keys the request reads and writes, as plain data (for hooks,
metering and ClientRequestToken memory). A batch or transaction is checked in full first, so
a bad element writes nothing. Messages use DynamoDB's wording where it is documented or known.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import constants as C
from ..capacity import item_size
from ..operations import DATA_PLANE, SINGLE, Op
from ..partition_keys import canonical
from . import expressions as X
from .decode import DYNAMODB, Request
from .encode import ClientFault, cancelled
from .items import KeyMismatch, check_item, check_key
from .legacy import translate
from .schema import TableSchema
from .semantics import attribute_names, check_condition
from .shapes import check_request
from .updates import update as parse_update
from .values import check_value

SchemaOf = Callable[[str], TableSchema | None]

#: Required by DynamoDB though botocore's model marks them optional.
_ALSO_REQUIRED: dict[str, tuple[str, ...]] = {Op.CREATE_TABLE: ("KeySchema", "AttributeDefinitions")}
_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "FilterExpression",
    "KeyConditionExpression",
)


@dataclass(frozen=True)
class Target:
    """One item a request writes (or checks, in a transaction)."""

    table: str
    key: dict[str, Any]
    pk: str
    transactional: bool = False
    check_only: bool = False


@dataclass
class Plan:
    """What a validated request touches."""

    reads: list[tuple[str, str]] = field(default_factory=list)  # (table, partition key)
    writes: list[Target] = field(default_factory=list)
    gets: list[tuple[str, dict[str, Any], bool, bool]] = field(default_factory=list)  # table, key, strong, in a tx
    #: Parsed expressions per parameter scope (the request, a transaction action, a BatchGetItem
    #: table), keyed by the scope dict's id: the dicts live as long as the request.
    parsed: dict[int, dict[str, X.Parsed]] = field(default_factory=dict)

    def parsed_of(self, scope: Mapping[str, Any]) -> dict[str, X.Parsed]:
        """The expressions parsed for one parameter scope (empty if it has none)."""
        return self.parsed.get(id(scope), {})


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", message)


def _schema(schema_of: SchemaOf, table: str) -> TableSchema:
    schema = schema_of(table)
    if schema is None:
        raise ClientFault("ResourceNotFoundException", "Requested resource not found")
    return schema


def _expressions(scope: Mapping[str, Any], plan: Plan) -> dict[str, X.Parsed]:
    """Parse every expression of ``scope``; check placeholders are defined and all used."""
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
            raise _invalid(f"ExpressionAttribute{kind} must not be empty")
        if not parsed:
            raise _invalid(f"ExpressionAttribute{kind} can only be specified when using expressions")
        used = set().union(*((p.names if kind == "Names" else p.values) for p in parsed.values()))
        unused = [k for k in given if k not in used]
        if unused:
            raise _invalid(
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


def _check_combinations(op: str, params: Mapping[str, Any]) -> None:
    """Rules across parameters that DynamoDB checks before it looks the table up (Scan's segments)."""
    segment, total = params.get("Segment"), params.get("TotalSegments")
    if op != Op.SCAN or (segment is None and total is None):
        return
    if total is None:
        raise _invalid(
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
            "present"
        )
    if segment is None:
        raise _invalid(
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
            "present"
        )
    if segment >= total:
        raise _invalid(
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: "
            f"Segment: {segment} is not less than TotalSegments: {total}"
        )


def _index(schema: TableSchema, params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The key of the table, or of the index a Query or Scan names (which must exist; a GSI reads eventually)."""
    index_name = params.get("IndexName")
    if index_name is None:
        return schema.keys
    index = schema.index(index_name)
    if index is None:
        raise _invalid(f"The table does not have the specified index: {index_name}")
    if params.get("ConsistentRead") and not index.local:
        raise _invalid("Consistent reads are not supported on global secondary indexes")
    return index.keys


def _check_update_targets(schema: TableSchema, params: Mapping[str, Any], parsed: dict[str, X.Parsed]) -> None:
    """An UpdateExpression may not change a key attribute."""
    update = parsed.get("UpdateExpression")
    if update is None:
        return
    names = params.get("ExpressionAttributeNames") or {}
    for target in update.paths:
        first = str(target.parts[0])
        name = names.get(first, first)
        if name in schema.key_names:
            raise _invalid(
                f"One or more parameter values were invalid: Cannot update attribute {name}. "
                "This attribute is part of the key"
            )


def _query(schema: TableSchema, params: Mapping[str, Any], parsed: dict[str, X.Parsed]) -> str:
    keys = _index(schema, params)
    condition = parsed.get("KeyConditionExpression")
    if condition is None:
        if params.get("KeyConditions") is None:
            raise _invalid(
                "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
            )
        return ""
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    types = dict(keys)
    pk = ""
    for path, placeholder in condition.comparisons:
        name = names.get(path, path)
        value = values[placeholder]
        if name in types and next(iter(value)) != types[name]:
            raise _invalid(
                "One or more parameter values were invalid: Condition parameter type does not match schema type"
            )
    for path, placeholder in condition.equalities:
        if names.get(path, path) == keys[0][0]:
            pk = canonical(values[placeholder])
    if not pk:
        if any(names.get(path, path) == keys[0][0] for path, _ in condition.comparisons):
            # DynamoDB's answer when the partition key is there but not compared with `=`
            # (e.g. begins_with(PK, :p)): a Query reads exactly one partition.
            raise _invalid("Query key condition not supported")
        raise _invalid("Query condition missed key schema element: " + keys[0][0])
    found = parsed.get("FilterExpression")
    if found is not None and found.tree is not None:
        for name, _ in keys:
            if name in attribute_names(found.tree, names):
                raise _invalid(
                    f"Filter Expression can only contain non-primary key attributes: Primary key attribute: {name}"
                )
    return pk


def _check_select(params: Mapping[str, Any]) -> None:
    """Select=SPECIFIC_ATTRIBUTES needs a projection (the engine projects; moto never sees it)."""
    if params.get("Select") == "SPECIFIC_ATTRIBUTES" and params.get("ProjectionExpression") is None:
        raise _invalid(
            "1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing "
            "to get SPECIFIC_ATTRIBUTES"
        )


def _check_start_key(schema: TableSchema, params: Mapping[str, Any]) -> None:
    """ExclusiveStartKey: exactly the table's key (plus the index's key for an index), typed right."""
    start = params["ExclusiveStartKey"]
    for value in start.values():
        check_value(value)
    index = schema.index(params["IndexName"]) if params.get("IndexName") else None
    expected = dict(schema.keys) | (dict(index.keys) if index is not None else {})
    if set(start) != set(expected) or any(next(iter(start[k])) != t for k, t in expected.items()):
        raise _invalid("The provided starting key is invalid: The provided key element does not match the schema")


def _single(op: str, params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan, transactional: bool = False) -> None:
    """GetItem, PutItem, UpdateItem, DeleteItem, Query, Scan, or one action of a transaction."""
    table = params["TableName"]
    parsed = _expressions(params, plan)
    schema = _schema(schema_of, table)
    if op in (Op.GET_ITEM, "Get"):
        plan.reads.append((table, check_key(schema, params["Key"])))
        strong = transactional or bool(params.get("ConsistentRead"))
        plan.gets.append((table, dict(params["Key"]), strong, transactional))
    elif op in (Op.PUT_ITEM, "Put"):
        key, pk = check_item(schema, params["Item"])
        plan.writes.append(Target(table, key, pk, transactional))
    elif op in (Op.UPDATE_ITEM, "Update", Op.DELETE_ITEM, "Delete", "ConditionCheck"):
        pk = check_key(schema, params["Key"])
        _check_update_targets(schema, params, parsed)
        plan.writes.append(Target(table, dict(params["Key"]), pk, transactional, check_only=op == "ConditionCheck"))
    elif op == Op.QUERY:
        _check_select(params)
        pk = _query(schema, params, parsed)
        plan.reads.append((table, pk))
    elif op == Op.SCAN:
        _check_select(params)
        _index(schema, params)
    if params.get("ExclusiveStartKey") is not None:
        _check_start_key(schema, params)


def _transact_write(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan) -> None:
    """Every action checked; a key of the wrong type cancels the transaction (reason ``ValidationError``),
    as DynamoDB reports it, once the whole request has passed its other checks."""
    seen: set[tuple[str, str]] = set()
    size = 0
    mismatches: dict[int, str] = {}
    actions = params["TransactItems"]
    for i, action in enumerate(actions):
        present = [k for k, v in action.items() if v is not None and k in ("ConditionCheck", "Put", "Delete", "Update")]
        if len(present) != 1:
            raise _invalid("TransactItems can only contain one of Check, Put, Update or Delete")
        kind = present[0]
        body = action[kind]
        try:
            _single(kind, body, schema_of, plan, transactional=True)
        except KeyMismatch as mismatch:
            mismatches[i] = mismatch.message
            continue
        target = plan.writes[-1]
        ident = (target.table, json.dumps(target.key, sort_keys=True))
        if ident in seen:
            raise _invalid("Transaction request cannot include multiple operations on one item")
        seen.add(ident)
        size += item_size(body.get("Item") or body.get("Key") or {})
        size += sum(item_size({k: v}) for k, v in (body.get("ExpressionAttributeValues") or {}).items())
    if size > C.MAX_TRANSACT_REQUEST_BYTES:
        raise _invalid("Transaction request cannot be larger than 4 MB")
    if mismatches:
        raise cancelled(
            [
                ("ValidationError", mismatches[i], None) if i in mismatches else (None, None, None)
                for i in range(len(actions))
            ]
        )


def _batch_get(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan) -> None:
    total = sum(len(request["Keys"]) for request in params["RequestItems"].values())
    if total > C.MAX_BATCH_GET_KEYS:
        raise _invalid("Too many items requested for the BatchGetItem call")
    for table, request in params["RequestItems"].items():
        _expressions(request, plan)
        schema = _schema(schema_of, table)
        seen: set[str] = set()
        for key in request["Keys"]:
            plan.reads.append((table, check_key(schema, key)))
            plan.gets.append((table, dict(key), bool(request.get("ConsistentRead")), False))
            ident = json.dumps(key, sort_keys=True)
            if ident in seen:
                raise _invalid("Provided list of item keys contains duplicates")
            seen.add(ident)


def _batch_write(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan) -> None:
    requests = params["RequestItems"]
    total = sum(len(r) for r in requests.values())
    if total > C.MAX_BATCH_WRITE_ITEMS:
        raise _invalid(
            "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value "
            f"must satisfy constraint: [Member must have length less than or equal to "
            f"{C.MAX_BATCH_WRITE_ITEMS}, Member must have length greater than or equal to 1]"
        )
    for table, table_requests in requests.items():
        schema = _schema(schema_of, table)
        seen: set[str] = set()
        for request in table_requests:
            present = [k for k in ("PutRequest", "DeleteRequest") if request.get(k) is not None]
            if len(present) != 1:
                raise _invalid(
                    "Supplied AttributeValue has more than one datatypes set, must contain exactly one of "
                    "the supported datatypes"
                    if present
                    else "A WriteRequest must contain exactly one of PutRequest or DeleteRequest"
                )
            if present[0] == "PutRequest":
                key, pk = check_item(schema, request["PutRequest"]["Item"])
            else:
                key = request["DeleteRequest"]["Key"]
                pk = check_key(schema, key)
            ident = json.dumps(key, sort_keys=True)
            if ident in seen:
                raise _invalid("Provided list of item keys contains duplicates")
            seen.add(ident)
            plan.writes.append(Target(table, dict(key), pk))


def validate(request: Request, schema_of: SchemaOf) -> Plan:
    """Check ``request`` in full; raise :class:`ClientFault` or return what it touches."""
    params = request.params
    if request.operation == Op.CREATE_TABLE and params.get("TableName") is None:
        raise _invalid("The parameter 'TableName' is required but was not present in the request")
    check_request(request.service, request.operation, params)
    for name in _ALSO_REQUIRED.get(op := request.operation, ()):
        if params.get(name) is None:
            raise _invalid(
                f"1 validation error detected: Value null at '{name[0].lower() + name[1:]}' failed to satisfy "
                "constraint: Member must not be null"
            )
    plan = Plan()
    if request.service != DYNAMODB or op not in DATA_PLANE:
        return plan
    if op == Op.BATCH_GET_ITEM:
        for table_request in params["RequestItems"].values():
            translate(op, table_request)
    elif op in SINGLE:
        translate(op, params)
        _check_combinations(op, params)
    if op == Op.TRANSACT_WRITE_ITEMS:
        _transact_write(params, schema_of, plan)
    elif op == Op.TRANSACT_GET_ITEMS:
        for action in params["TransactItems"]:
            _single("Get", action["Get"], schema_of, plan, transactional=True)
    elif op == Op.BATCH_GET_ITEM:
        _batch_get(params, schema_of, plan)
    elif op == Op.BATCH_WRITE_ITEM:
        _batch_write(params, schema_of, plan)
    else:
        _single(op, params, schema_of, plan)
    return plan


__all__ = ["Plan", "SchemaOf", "Target", "validate"]
