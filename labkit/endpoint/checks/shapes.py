"""Check a request's JSON against botocore's model of the operation: the types and constraints
DynamoDB's front door checks before anything else.

A value of the wrong JSON type is a ``SerializationException``; a missing required member, a
length, range or enum constraint is a ``ValidationException`` worded as DynamoDB words it
(``1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member
must not be null``). Attribute values (``{"S": ...}``) are only checked to be objects here, and
their numbers rewritten as DynamoDB stores them; :mod:`labkit.endpoint.values` checks their contents.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ...shared import constants as C
from ...shared.catalogue import Op
from ..errors import ClientFault, invalid
from ..model import service_model
from ..values import canonicalise

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "structure": (dict,),
    "map": (dict,),
    "list": (list,),
    "string": (str,),
    "blob": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "long": (int,),
    "double": (int, float),
    "float": (int, float),
    "timestamp": (int, float, str),
}


_NUMERIC = frozenset({"integer", "long", "double", "float"})


@functools.cache
def input_shape(service: str, operation: str) -> Any:
    return service_model(service).operation_model(operation).input_shape


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _show(value: Any) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= 1024 else text[:1024] + "..."


def _error(value: Any, path: str, constraint: str) -> str:
    return f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: {constraint}"


#: DynamoDB lists these enums in its own order (not the model's).
_ENUM_ORDER = {
    frozenset({"ALL_ATTRIBUTES", "ALL_PROJECTED_ATTRIBUTES", "SPECIFIC_ATTRIBUTES", "COUNT"}): (
        "SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES"
    ),
    frozenset({"S", "N", "B"}): "B, N, S",
}
#: A table's name: 3 to 255 of these characters (or a table ARN, up to 1024).
TABLE_NAME = re.compile(r"[a-zA-Z0-9_.-]+")
_TABLE_NAME_MEMBERS = frozenset({"TableName", "ExclusiveStartTableName"})


class Spec:
    """One botocore shape, as plain data (botocore's shape properties are slow to read per request)."""

    __slots__ = (
        "enum",
        "expected",
        "high",
        "key",
        "kind",
        "low",
        "member",
        "members",
        "opaque",
        "pattern",
        "required",
        "value",
    )

    def __init__(self, shape: Any) -> None:
        self.kind: str = shape.type_name
        self.expected = _JSON_TYPES.get(self.kind, (object,))
        self.low: int | None = shape.metadata.get("min")
        self.high: int | None = shape.metadata.get("max")
        self.enum: tuple[str, ...] = tuple(getattr(shape, "enum", None) or ())
        pattern = shape.metadata.get("pattern")
        self.pattern = re.compile(pattern) if pattern else None
        self.opaque = shape.name == "AttributeValue"  # values.py checks the contents
        self.required: tuple[str, ...] = tuple(getattr(shape, "required_members", ()) or ())
        self.members: dict[str, tuple[str, Spec]] = {}
        self.member: Spec | None = None
        self.key: Spec | None = None
        self.value: Spec | None = None


def _spec(shape: Any, memo: dict[str, Spec]) -> Spec:
    found = memo.get(shape.name)
    if found is not None:
        return found
    spec = memo[shape.name] = Spec(shape)
    if spec.opaque:
        return spec
    if spec.kind == "structure":
        spec.members = {name: (_camel(name), _spec(member, memo)) for name, member in shape.members.items()}
    elif spec.kind == "list":
        spec.member = _spec(shape.member, memo)
    elif spec.kind == "map":
        spec.key, spec.value = _spec(shape.key, memo), _spec(shape.value, memo)
    return spec


@functools.cache
def request_spec(service: str, operation: str) -> Spec:
    return _spec(input_shape(service, operation), {})


def _java_value(value: Any) -> str:
    """An attribute value as DynamoDB's Java front door prints it: ``{S: x,}``, ``{M: {a={N: 1,}},}``."""
    if not isinstance(value, dict):
        return str(value)
    parts = []
    for kind, inner in value.items():
        if kind == "M" and isinstance(inner, dict):
            shown = "{" + ", ".join(f"{k}={_java_value(v)}" for k, v in inner.items()) + "}"
        elif kind == "L" and isinstance(inner, list):
            shown = "[" + ", ".join(_java_value(v) for v in inner) + "]"
        elif isinstance(inner, list):
            shown = "[" + ", ".join(map(str, inner)) + "]"
        elif isinstance(inner, bool):
            shown = str(inner).lower()
        else:
            shown = str(inner)
        parts.append(f"{kind}: {shown},")
    return "{" + "".join(parts) + "}"


def java_text(value: Any, spec: Spec) -> str:
    """``value`` as DynamoDB echoes a request member in a constraint message: Java's ``toString`` of
    its model (structures ``{Name: value,}``, maps ``{key=value}``, lists ``[a, b]``), in full."""
    if spec.opaque:
        return _java_value(value)
    if spec.kind == "structure" and isinstance(value, dict):
        shown = (
            f"{name}: {java_text(value[name], member)},"
            for name, (_, member) in spec.members.items()
            if value.get(name) is not None
        )
        return "{" + "".join(shown) + "}"
    if spec.kind == "list" and isinstance(value, list) and spec.member is not None:
        return "[" + ", ".join(java_text(v, spec.member) for v in value) + "]"
    if spec.kind == "map" and isinstance(value, dict) and spec.value is not None:
        return "{" + ", ".join(f"{k}={java_text(v, spec.value)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _check_length(value: Any, spec: Spec, path: str, size: int, errors: list[str]) -> None:
    if spec.low is not None and size < spec.low:
        errors.append(_error(value, path, f"Member must have length greater than or equal to {spec.low}"))
    if spec.high is not None and size > spec.high:
        constraint = f"Member must have length less than or equal to {spec.high}"
        if spec.kind == "list":  # a list past its limit is echoed whole, as Java prints it
            errors.append(f"Value '{java_text(value, spec)}' at '{path}' failed to satisfy constraint: {constraint}")
        else:
            errors.append(_error(value, path, constraint))


def _wrong_type(value: Any, spec: Spec) -> bool:
    return not isinstance(value, spec.expected) or (isinstance(value, bool) and spec.kind in _NUMERIC)


def table_name_errors(name: str, path: str, create: bool = False) -> list[str]:
    """DynamoDB's checks of a table name (``create``: CreateTable's, which takes no ARN)."""
    if not create and name.startswith("arn:"):
        return [] if len(name) <= 1024 else [_error(name, path, "Member must have length less than or equal to 1024")]
    if not name and not create:
        return [_error(name, path, "Member must have length greater than or equal to 1")]
    errors = []
    if len(name) < 3:
        errors.append(_error(name, path, "Member must have length greater than or equal to 3"))
    if len(name) > 255:
        errors.append(_error(name, path, "Member must have length less than or equal to 255"))
    if not TABLE_NAME.fullmatch(name):
        errors.append(_error(name, path, f"Member must satisfy regular expression pattern: {TABLE_NAME.pattern}"))
    return errors


def check(value: Any, spec: Spec, path: str, errors: list[str], create: bool = False) -> None:
    """Add to ``errors`` each constraint ``value`` breaks; raise SerializationException for a wrong JSON type."""
    kind = spec.kind
    if _wrong_type(value, spec):
        where = path or "the request"
        raise ClientFault("SerializationException", f"{where}: expected a JSON {kind}, got {type(value).__name__}")
    if spec.opaque:
        canonicalise(value)  # numbers as DynamoDB stores them, wherever an attribute value is
        return
    if kind == "structure":
        for name in spec.required:
            if value.get(name) is None:
                member = f"{path}.{_camel(name)}" if path else _camel(name)
                errors.append(f"Value null at '{member}' failed to satisfy constraint: Member must not be null")
        members = spec.members
        for name, item in value.items():
            found = members.get(name)
            if found is None or item is None:
                continue
            camel, child = found
            where = f"{path}.{camel}" if path else camel
            if name in _TABLE_NAME_MEMBERS and isinstance(item, str):
                errors.extend(table_name_errors(item, where, create))
            else:
                check(item, child, where, errors, create)
    elif kind == "string":
        if spec.low is not None or spec.high is not None:
            _check_length(value, spec, path, len(value), errors)
        if spec.pattern is not None and not spec.pattern.fullmatch(value):
            errors.append(
                _error(value, path, f"Member must satisfy regular expression pattern: {spec.pattern.pattern}")
            )
        if spec.enum and value not in spec.enum:
            shown = _ENUM_ORDER.get(frozenset(spec.enum), ", ".join(spec.enum))
            errors.append(_error(value, path, f"Member must satisfy enum value set: [{shown}]"))
    elif kind == "list":
        assert spec.member is not None
        _check_length(value, spec, path, len(value), errors)
        for i, item in enumerate(value, 1):
            check(item, spec.member, f"{path}.{i}.member", errors, create)
    elif kind == "map":
        assert spec.key is not None and spec.value is not None
        _check_length(value, spec, path, len(value), errors)
        for key, item in value.items():
            check(key, spec.key, path, errors, create)
            check(item, spec.value, f"{path}.{key}", errors, create)
    elif kind in ("integer", "long"):
        if spec.low is not None and value < spec.low:
            errors.append(_error(value, path, f"Member must have value greater than or equal to {spec.low}"))
        if spec.high is not None and value > spec.high:
            errors.append(_error(value, path, f"Member must have value less than or equal to {spec.high}"))


def _query_limit(error: str) -> str:
    """DynamoDB words Query's ``Limit`` below 1 without the value and capitalised: "Value at 'Limit' ..."."""
    value, found, rest = error.partition("' at 'limit' ")
    return f"Value at 'Limit' {rest}" if found and value.startswith("Value '") else error


def _batch_front_door(operation: str, params: dict[str, Any], spec: Spec) -> None:
    """What DynamoDB's front door says of a batch's ``RequestItems`` before its other constraints:
    an empty map is a missing parameter; a table's list past its limit is named apart."""
    requests = params.get("RequestItems")
    if not isinstance(requests, dict):
        return
    if not requests:
        raise invalid(f"The requestItems parameter is required for {operation}")
    if operation == Op.BATCH_GET_ITEM:
        for table, request in requests.items():
            keys = request.get("Keys") if isinstance(request, dict) else None
            if isinstance(keys, list) and len(keys) > C.MAX_BATCH_GET_KEYS:
                raise invalid(
                    f"1 validation error detected: Value at 'RequestItems.{table}.member.Keys' failed to satisfy "
                    f"constraint: Member must have length less than or equal to {C.MAX_BATCH_GET_KEYS}"
                )
        return
    if any(isinstance(r, list) and not 1 <= len(r) <= C.MAX_BATCH_WRITE_ITEMS for r in requests.values()):
        shown = java_text(requests, spec.members["RequestItems"][1])
        raise invalid(
            f"1 validation error detected: Value '{shown}' at 'requestItems' failed to satisfy constraint: Map value "
            f"must satisfy constraint: [Member must have length less than or equal to {C.MAX_BATCH_WRITE_ITEMS}, "
            "Member must have length greater than or equal to 1]"
        )


def check_request(service: str, operation: str, params: dict[str, Any]) -> None:
    """Check a whole request against the operation's input shape, as DynamoDB's front door does:
    every broken constraint in one ``N validation errors detected: ...; ...`` (a bad table name
    alone: DynamoDB stops there). CreateTable's front door speaks first of a missing TableName;
    a batch's front door of an empty or overfull ``RequestItems``."""
    if operation == Op.CREATE_TABLE and params.get("TableName") is None:
        raise invalid("The parameter 'TableName' is required but was not present in the request")
    spec = request_spec(service, operation)
    if operation in (Op.BATCH_GET_ITEM, Op.BATCH_WRITE_ITEM):
        _batch_front_door(operation, params, spec)
    errors: list[str] = []
    check(params, spec, "", errors, create=operation == Op.CREATE_TABLE)
    if not errors:
        return
    named = [e for e in errors if "' at 'tableName' " in e]
    if named:
        errors = named
    elif operation == Op.QUERY:
        errors = [_query_limit(e) for e in errors]
    count = len(errors)
    raise ClientFault(
        "ValidationException",
        f"{count} validation error{'s' if count > 1 else ''} detected: {'; '.join(errors)}",
    )


__all__ = [
    "TABLE_NAME",
    "Spec",
    "check",
    "check_request",
    "input_shape",
    "java_text",
    "request_spec",
    "table_name_errors",
]
