"""ExecuteStatement, BatchExecuteStatement and ExecuteTransaction: PartiQL run as DynamoDB requests.

Each statement (:mod:`labkit.endpoint.partiql.syntax`) becomes the request DynamoDB's documentation
describes for it, with expressions and generated placeholders, and goes through the engine like
any request (validated, seen by hooks, applied atomically, metered):

* SELECT: a Query when the WHERE clause pins the partition key with ``=`` (else a Scan), the
  whole WHERE clause as the filter; ``SELECT a.b`` answers ``{"b": ...}`` (PartiQL names a
  projected path by its last element); in a batch, a GetItem by the full primary key;
* INSERT: a PutItem that refuses an existing item (``DuplicateItemException``, "Duplicate
  primary key exists in table"); UPDATE and DELETE: an UpdateItem / DeleteItem of the one item
  the WHERE clause names by its full key, its other conditions a condition on that item (an UPDATE
  also requires the item to exist: it never creates one);
* ExecuteTransaction: one TransactWriteItems (or TransactGetItems for reads), so a duplicate
  INSERT cancels them all (reason ``DuplicateItem``); BatchExecuteStatement: each statement on
  its own, an error in one answered in its place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...shared.catalogue import Op
from ..checks.request import table_schema
from ..errors import ClientFault
from ..expressions.legacy import Placeholders
from ..schema import SchemaOf, TableSchema
from ..wire.decode import Request
from ..wire.encode import Response
from .syntax import Cond, Func, Literal, Param, Ref, Statement

#: The engine's own request path (validated, hooked, applied, metered), for the requests statements become.
Run = Callable[[Request], Response]
DUPLICATE = "Duplicate primary key exists in table"
#: DynamoDB documents that EXISTS "can only be used in transactions", not its message: labkit's words.
EXISTS_OUTSIDE = "The EXISTS function can only be used in transactions (ExecuteTransaction)"
_SET_KINDS = {"S": "SS", "N": "NS", "B": "BS"}


class _Builder(Placeholders):
    """Placeholders for one statement's expressions, with its parameters bound."""

    def __init__(self, parameters: list[Any]) -> None:
        super().__init__("p")
        self.parameters = parameters

    def bind(self, node: Any) -> Any:
        """A literal or parameter as a DynamoDB attribute value."""
        if isinstance(node, Param):
            if node.index >= len(self.parameters):
                raise ClientFault("ValidationException", "Number of parameters in request and statement don't match.")
            return self.parameters[node.index]
        value = node.value
        if "M" in value:
            return {"M": {k: self.bind(v) for k, v in value["M"].items()}}
        if "L" in value:
            return {"L": [self.bind(v) for v in value["L"]]}
        if "<<" in value:
            members = [self.bind(v) for v in value["<<"]]
            kind = next(iter(members[0])) if members else "S"
            return {_SET_KINDS.get(kind, "SS"): [m.get(kind) for m in members]}
        return value

    def path(self, ref: Ref) -> str:
        text = ""
        for part in ref.parts:
            text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + self.name(part)
        return text

    def value(self, node: Any) -> str:
        return self.add_value(self.bind(node))

    def operand(self, node: Any) -> str:
        if isinstance(node, Ref):
            return self.path(node)
        if isinstance(node, Func):
            return f"size({self.path(node.args[0])})"
        return self.value(node)

    def condition(self, node: Cond) -> str:
        op, args = node.op, node.args
        if op in ("AND", "OR"):
            return f"({self.condition(args[0])}) {op} ({self.condition(args[1])})"
        if op == "NOT":
            return f"NOT ({self.condition(args[0])})"
        if op in ("MISSING", "NOT MISSING"):
            fn = "attribute_not_exists" if op == "MISSING" else "attribute_exists"
            return f"{fn}({self.operand(args[0])})"
        if op in ("NULL", "NOT NULL"):
            text = f"attribute_type({self.operand(args[0])}, {self.value(Literal({'S': 'NULL'}))})"
            return text if op == "NULL" else f"NOT {text}"
        if op == "BETWEEN":
            return f"{self.operand(args[0])} BETWEEN {self.operand(args[1])} AND {self.operand(args[2])}"
        if op == "IN":
            return f"{self.operand(args[0])} IN ({', '.join(self.operand(a) for a in args[1:])})"
        if op in ("begins_with", "contains", "attribute_type"):
            return f"{op}({', '.join(self.operand(a) for a in args)})"
        return f"{self.operand(args[0])} {op} {self.operand(args[1])}"


def condition_check(stmt: Statement, parameters: list[Any], schema_of: SchemaOf) -> dict[str, Any]:
    """An ``EXISTS(SELECT ... WHERE <full key> AND <condition>)`` as the ConditionCheck it does.

    Developer Guide, "Using the EXISTS function with PartiQL for DynamoDB": "You can use EXISTS to
    perform the same function as ``ConditionCheck`` does in the TransactWriteItems API. The EXISTS
    function can only be used in transactions." The item must exist and meet the WHERE clause's
    other conditions, or the transaction is cancelled (reason ``ConditionalCheckFailed``).
    """
    if stmt.parameters != len(parameters):
        raise ClientFault("ValidationException", "Number of parameters in request and statement don't match.")
    if stmt.index is not None:
        raise ClientFault("ValidationException", "Reads on indices are not supported within transactions.")
    schema = table_schema(schema_of, stmt.table)
    build = _Builder(parameters)
    keys = {(name,) for name in schema.key_names}
    rest = [
        c
        for c in _conjuncts(stmt.where)
        if not (c.op == "=" and any(isinstance(a, Ref) and a.parts in keys for a in c.args))
    ]
    exists = f"attribute_exists({build.name(schema.hash_key)})"
    params: dict[str, Any] = {
        "TableName": stmt.table,
        "Key": _full_key(schema, stmt, build),
        "ConditionExpression": " AND ".join([exists, *(f"({build.condition(c)})" for c in rest)]),
    }
    return build.attach(params)


def _conjuncts(node: Cond | None) -> list[Cond]:
    if node is None:
        return []
    if node.op == "AND":
        return _conjuncts(node.args[0]) + _conjuncts(node.args[1])
    return [node]


def _key_equalities(node: Cond | None, build: _Builder) -> dict[str, Any]:
    """Top-level ``name = value`` conditions (AND-ed), by attribute name."""
    found: dict[str, Any] = {}
    for part in _conjuncts(node):
        if part.op != "=":
            continue
        left, right = part.args
        if isinstance(right, Ref) and not isinstance(left, Ref):
            left, right = right, left
        if isinstance(left, Ref) and len(left.parts) == 1 and isinstance(right, Literal | Param):
            found[str(left.parts[0])] = build.bind(right)
    return found


def _full_key(schema: TableSchema, stmt: Statement, build: _Builder) -> dict[str, Any]:
    equal = _key_equalities(stmt.where, build)
    if any(name not in equal for name in schema.key_names):
        raise ClientFault(
            "ValidationException", "Where clause does not contain a mandatory equality on all key attributes"
        )
    return {name: equal[name] for name in schema.key_names}


def _item_condition(schema: TableSchema, stmt: Statement, build: _Builder) -> str | None:
    """The condition the WHERE clause puts on the item its key names.

    UPDATE: the item exists and the other conditions hold ("If the WHERE clause of the UPDATE statement does not
    evaluate to true for any item in the DynamoDB table, ConditionalCheckFailedException is returned": an UPDATE
    never creates an item). DELETE: no item, or the other conditions hold (a DELETE of a key with no item is a
    SUCCESS with 0 items deleted). Each condition is parenthesised once: DynamoDB refuses ``((...))``.
    """
    keys = {(name,) for name in schema.key_names}
    rest = [
        f"({build.condition(c)})"
        for c in _conjuncts(stmt.where)
        if not (c.op == "=" and any(isinstance(a, Ref) and a.parts in keys for a in c.args))
    ]
    if stmt.kind == "UPDATE":
        return " AND ".join([f"attribute_exists({build.name(schema.hash_key)})", *rest])
    if not rest:
        return None
    joined = rest[0] if len(rest) == 1 else f"({' AND '.join(rest)})"
    return f"attribute_not_exists({build.name(schema.hash_key)}) OR {joined}"


def _update(build: _Builder, stmt: Statement) -> str:
    clauses: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    for ref, value in stmt.sets:
        path = build.path(ref)
        if isinstance(value, Func) and value.name in ("set_add", "set_delete"):
            clauses["ADD" if value.name == "set_add" else "DELETE"].append(f"{path} {build.operand(value.args[1])}")
        elif isinstance(value, Func) and value.name == "list_append":
            clauses["SET"].append(
                f"{path} = list_append({build.operand(value.args[0])}, {build.operand(value.args[1])})"
            )
        elif isinstance(value, Func) and value.name in ("+", "-"):
            a, b = (build.operand(v) for v in value.args)
            clauses["SET"].append(f"{path} = {a} {value.name} {b}")
        else:
            clauses["SET"].append(f"{path} = {build.operand(value)}")
    clauses["REMOVE"].extend(build.path(ref) for ref in stmt.removes)
    return " ".join(f"{clause} {', '.join(parts)}" for clause, parts in clauses.items() if parts)


def translate(
    stmt: Statement, parameters: list[Any], schema_of: SchemaOf, batch: bool = False
) -> tuple[str, dict[str, Any]]:
    """The DynamoDB request (operation, parameters) a statement is run as."""
    if stmt.kind == "EXISTS":
        raise ClientFault("ValidationException", EXISTS_OUTSIDE)
    if stmt.parameters != len(parameters):
        raise ClientFault("ValidationException", "Number of parameters in request and statement don't match.")
    schema = table_schema(schema_of, stmt.table)
    build = _Builder(parameters)
    params: dict[str, Any] = {"TableName": stmt.table}
    if stmt.kind == "INSERT":
        assert isinstance(stmt.item, Literal)
        item = build.bind(stmt.item)["M"]
        params["Item"] = item
        params["ConditionExpression"] = f"attribute_not_exists({build.name(schema.hash_key)})"
        return Op.PUT_ITEM, build.attach(params)
    if stmt.kind in ("UPDATE", "DELETE"):
        if stmt.kind == "DELETE" and stmt.returning not in (None, "ALL OLD"):
            raise ClientFault(
                "ValidationException",
                f"Invalid returning clause: RETURNING {stmt.returning} *. Only RETURNING ALL OLD * is allowed in "
                "DELETE statements.",
            )
        params["Key"] = _full_key(schema, stmt, build)
        if stmt.kind == "UPDATE":
            params["UpdateExpression"] = _update(build, stmt)
        condition = _item_condition(schema, stmt, build)
        if condition is not None:
            params["ConditionExpression"] = condition
        if stmt.returning is not None:
            params["ReturnValues"] = stmt.returning.replace(" ", "_")
        return (Op.UPDATE_ITEM if stmt.kind == "UPDATE" else Op.DELETE_ITEM), build.attach(params)
    if batch:
        if stmt.index is not None:
            raise _batch_select()
        try:
            params["Key"] = _full_key(schema, stmt, build)
        except ClientFault as fault:
            raise _batch_select() from fault
        return Op.GET_ITEM, params
    keys = schema.keys
    if stmt.index is not None:
        index = schema.index(stmt.index)
        if index is None:
            raise ClientFault("ValidationException", "The table does not have the specified index")
        params["IndexName"], keys = stmt.index, index.keys
    key_part, rest = _key_condition(stmt.where, [name for name, _ in keys])
    if key_part:
        params["KeyConditionExpression"] = " AND ".join(build.condition(c) for c in key_part)
        if rest:
            params["FilterExpression"] = " AND ".join(f"({build.condition(c)})" for c in rest)
        return Op.QUERY, build.attach(params)
    if stmt.where is not None:
        params["FilterExpression"] = build.condition(stmt.where)
    return Op.SCAN, build.attach(params)


def _names(node: Any) -> set[str]:
    """The top-level attribute names a condition (or operand) reads."""
    if isinstance(node, Ref):
        return {str(node.parts[0])}
    if isinstance(node, Cond | Func):
        return set().union(*(_names(a) for a in node.args))
    return set()


def _on(node: Cond, name: str, ops: tuple[str, ...]) -> bool:
    """``name <op> value`` (or BETWEEN, begins_with) with the attribute first and only values after it."""
    first, *others = node.args
    return (
        node.op in ops
        and isinstance(first, Ref)
        and first.parts == (name,)
        and all(isinstance(o, Literal | Param) for o in others)
    )


def _key_condition(where: Cond | None, keys: list[str]) -> tuple[list[Cond], list[Cond]]:
    """(the key condition a Query can use, the rest as its filter); no key condition when the WHERE clause does
    not pin the partition key with `=` or the rest still reads a key attribute (then it is a Scan)."""
    conjuncts = _conjuncts(where)
    found = [next((c for c in conjuncts if _on(c, keys[0], ("=",))), None)]
    if found[0] is None:
        return [], conjuncts
    if len(keys) > 1:
        ops = ("=", "<", "<=", ">", ">=", "BETWEEN", "begins_with")
        found.append(next((c for c in conjuncts if c is not found[0] and _on(c, keys[1], ops)), None))
    key_part = [c for c in found if c is not None]
    rest = [c for c in conjuncts if all(c is not k for k in key_part)]
    if any(_names(c) & set(keys) for c in rest):
        return [], conjuncts
    return key_part, rest


def _batch_select() -> ClientFault:
    return ClientFault(
        "ValidationException",
        "Select statements within BatchExecuteStatement must specify the primary key in the where clause.",
    )


def projected(item: Mapping[str, Any], projection: tuple[Ref, ...]) -> dict[str, Any]:
    """``SELECT a.b, c`` -> ``{"b": ..., "c": ...}``: each path's value under its last name."""
    if not projection:
        return dict(item)
    out: dict[str, Any] = {}
    for ref in projection:
        value: Any = {"M": item}
        for part in ref.parts:
            container = value.get("L") if isinstance(part, int) else value.get("M")
            try:
                value = container[part] if container is not None else None
            except (IndexError, KeyError, TypeError):
                value = None
            if value is None:
                break
        if value is not None:
            out[next(str(p) for p in reversed(ref.parts) if isinstance(p, str))] = value
    return out


__all__ = ["DUPLICATE", "Run", "projected", "translate"]
