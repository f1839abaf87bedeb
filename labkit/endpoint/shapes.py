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


def _check_length(value: Any, shape: Any, path: str, size: int) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        raise _invalid(value, path, f"Member must have length greater than or equal to {low}")
    if high is not None and size > high:
        raise _invalid(value, path, f"Member must have length less than or equal to {high}")


def check(value: Any, shape: Any, path: str = "") -> None:
    """Raise :class:`ClientFault` for the first way ``value`` does not fit ``shape``."""
    kind = shape.type_name
    expected = _JSON_TYPES.get(kind, (object,))
    if not isinstance(value, expected) or (kind in ("integer", "long", "double", "float") and isinstance(value, bool)):
        where = path or "the request"
        raise ClientFault(
            "SerializationException",
            f"{where}: expected a JSON {kind}, got {type(value).__name__}",
        )
    _check_contents(value, shape, path)


def _check_contents(value: Any, shape: Any, path: str) -> None:
    kind = shape.type_name
    if shape.name == "AttributeValue":
        return  # values.py checks the contents
    if kind == "structure":
        for name in shape.required_members:
            if value.get(name) is None:
                member = f"{path}.{_camel(name)}" if path else _camel(name)
                raise ClientFault(
                    "ValidationException",
                    f"1 validation error detected: Value null at '{member}' failed to satisfy constraint: "
                    "Member must not be null",
                )
        members = shape.members
        for name, item in value.items():
            if name in members and item is not None:
                check(item, members[name], f"{path}.{_camel(name)}" if path else _camel(name))
    elif kind == "list":
        _check_length(value, shape, path, len(value))
        for i, item in enumerate(value, 1):
            check(item, shape.member, f"{path}.{i}.member")
    elif kind == "map":
        _check_length(value, shape, path, len(value))
        for key, item in value.items():
            check(key, shape.key, f"{path}.key")
            check(item, shape.value, f"{path}.{key}")
    elif kind == "string":
        _check_length(value, shape, path, len(value))
        if shape.enum and value not in shape.enum:
            raise _invalid(value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
    elif kind in ("integer", "long"):
        low, high = shape.metadata.get("min"), shape.metadata.get("max")
        if low is not None and value < low:
            raise _invalid(value, path, f"Member must have value greater than or equal to {low}")
        if high is not None and value > high:
            raise _invalid(value, path, f"Member must have value less than or equal to {high}")


def check_request(service: str, operation: str, params: dict[str, Any]) -> None:
    """Check a whole request against the operation's input shape."""
    check(params, input_shape(service, operation))


__all__ = ["check", "check_request", "input_shape"]
