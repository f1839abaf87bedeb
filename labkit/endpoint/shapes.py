"""Check a request's JSON against botocore's model of the operation: the types and constraints
DynamoDB's front door checks before anything else.

A value of the wrong JSON type is a ``SerializationException``; a missing required member, a
length, range or enum constraint is a ``ValidationException`` worded as DynamoDB words it
(``1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member
must not be null``). Attribute values (``{"S": ...}``) are only checked to be objects here;
:mod:`labkit.endpoint.values` checks their contents.
"""

from __future__ import annotations

import functools
from typing import Any

from .encode import ClientFault

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
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    return model.operation_model(operation).input_shape


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _show(value: Any) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _invalid(value: Any, path: str, constraint: str) -> ClientFault:
    return ClientFault(
        "ValidationException",
        f"1 validation error detected: Value '{_show(value)}' at '{path}' failed to satisfy constraint: {constraint}",
    )


class Spec:
    """One botocore shape, as plain data (botocore's shape properties are slow to read per request)."""

    __slots__ = ("enum", "expected", "high", "key", "kind", "low", "member", "members", "opaque", "required", "value")

    def __init__(self, shape: Any) -> None:
        self.kind: str = shape.type_name
        self.expected = _JSON_TYPES.get(self.kind, (object,))
        self.low: int | None = shape.metadata.get("min")
        self.high: int | None = shape.metadata.get("max")
        self.enum = frozenset(getattr(shape, "enum", None) or ())
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


def _check_length(value: Any, spec: Spec, path: str, size: int) -> None:
    if spec.low is not None and size < spec.low:
        raise _invalid(value, path, f"Member must have length greater than or equal to {spec.low}")
    if spec.high is not None and size > spec.high:
        raise _invalid(value, path, f"Member must have length less than or equal to {spec.high}")


def _wrong_type(value: Any, spec: Spec) -> bool:
    return not isinstance(value, spec.expected) or (isinstance(value, bool) and spec.kind in _NUMERIC)


def check(value: Any, spec: Spec, path: str = "") -> None:
    """Raise :class:`ClientFault` for the first way ``value`` does not fit ``spec``."""
    kind = spec.kind
    if _wrong_type(value, spec):
        where = path or "the request"
        raise ClientFault("SerializationException", f"{where}: expected a JSON {kind}, got {type(value).__name__}")
    if spec.opaque:
        return
    if kind == "structure":
        for name in spec.required:
            if value.get(name) is None:
                member = f"{path}.{_camel(name)}" if path else _camel(name)
                raise ClientFault(
                    "ValidationException",
                    f"1 validation error detected: Value null at '{member}' failed to satisfy constraint: "
                    "Member must not be null",
                )
        members = spec.members
        for name, item in value.items():
            found = members.get(name)
            if found is not None and item is not None:
                camel, child = found
                check(item, child, f"{path}.{camel}" if path else camel)
    elif kind == "string":
        if spec.low is not None or spec.high is not None:
            _check_length(value, spec, path, len(value))
        if spec.enum and value not in spec.enum:
            raise _invalid(value, path, f"Member must satisfy enum value set: [{', '.join(sorted(spec.enum))}]")
    elif kind == "list":
        assert spec.member is not None
        _check_length(value, spec, path, len(value))
        for i, item in enumerate(value, 1):
            check(item, spec.member, f"{path}.{i}.member")
    elif kind == "map":
        assert spec.key is not None and spec.value is not None
        _check_length(value, spec, path, len(value))
        for key, item in value.items():
            check(key, spec.key, path)
            check(item, spec.value, f"{path}.{key}")
    elif kind in ("integer", "long"):
        if spec.low is not None and value < spec.low:
            raise _invalid(value, path, f"Member must have value greater than or equal to {spec.low}")
        if spec.high is not None and value > spec.high:
            raise _invalid(value, path, f"Member must have value less than or equal to {spec.high}")


def check_request(service: str, operation: str, params: dict[str, Any]) -> None:
    """Check a whole request against the operation's input shape."""
    check(params, request_spec(service, operation))


__all__ = ["Spec", "check", "check_request", "input_shape", "request_spec"]
