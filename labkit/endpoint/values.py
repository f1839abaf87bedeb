"""DynamoDB attribute values (``{"S": "x"}``, ``{"NS": ["1"]}``, ...): what DynamoDB accepts.

* exactly one type per value, and the JSON type that type needs;
* numbers: at most 38 significant digits, magnitude 1E-130 .. 9.9999999999999999999999999999999999999E+125 (or 0),
  stored as :func:`labkit.shared.numbers.canonical` writes them (:func:`canonicalise`);
* binary: base64; sets: not empty, no duplicates (``1`` and ``1.0`` are the same number);
* documents nested at most 32 levels.
"""

from __future__ import annotations

import base64
import binascii
import decimal
from collections.abc import Mapping
from typing import Any

from ..shared import constants as C
from ..shared import numbers
from .errors import ClientFault

MAX_DEPTH = C.MAX_DOCUMENT_DEPTH
_SET_NAMES = {"SS": "string", "NS": "number", "BS": "binary"}
TYPES = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", message)


def number(text: Any) -> decimal.Decimal:
    """The Decimal DynamoDB stores for ``text``; ClientFault if DynamoDB refuses it."""
    if not isinstance(text, str):
        raise ClientFault("SerializationException", f"a number must be sent as a JSON string, not {text!r}")
    try:
        return numbers.parse(text)
    except numbers.NumberError as exc:
        raise _invalid(str(exc)) from exc


def canonicalise(value: Any) -> None:
    """Rewrite the numbers in an attribute value, in place, as DynamoDB stores them (``1.0`` -> ``1``).

    Anything DynamoDB would refuse is left as it is, for :func:`check_value` to refuse with
    DynamoDB's message (so is a number set whose numbers are equal once normalised: its
    duplicates are reported as written).
    """
    if not isinstance(value, dict) or len(value) != 1:
        return
    ((kind, v),) = value.items()
    try:
        if kind == "N" and isinstance(v, str):
            value["N"] = numbers.canonical(v)
        elif kind == "NS" and isinstance(v, list) and all(isinstance(e, str) for e in v):
            normal = [numbers.canonical(e) for e in v]
            if len(set(normal)) == len(normal):
                value["NS"] = normal
        elif kind == "L" and isinstance(v, list):
            for element in v:
                canonicalise(element)
        elif kind == "M" and isinstance(v, dict):
            for element in v.values():
                canonicalise(element)
    except numbers.NumberError:
        return


def binary(text: Any) -> bytes:
    if not isinstance(text, str):
        raise ClientFault("SerializationException", "a binary value must be sent as a base64 JSON string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ClientFault("SerializationException", "a binary value is not valid base64") from exc


def check_value(value: Any, depth: int = 1) -> None:
    """Raise :class:`ClientFault` if DynamoDB would refuse the attribute value ``value``."""
    if not isinstance(value, dict):
        raise ClientFault("SerializationException", f"an attribute value must be a JSON object, not {value!r:.60}")
    if len(value) != 1:
        raise _invalid(
            "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported "
            "datatypes"
            if value
            else "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
        )
    ((kind, v),) = value.items()
    if kind in ("L", "M") and depth > MAX_DEPTH:  # 32 lists or maps inside each other, not 33
        raise _invalid("Nesting Levels have exceeded supported limits")
    if kind == "S":
        if not isinstance(v, str):
            raise ClientFault("SerializationException", "a string value must be a JSON string")
    elif kind == "N":
        number(v)
    elif kind == "B":
        binary(v)
    elif kind == "BOOL":
        if not isinstance(v, bool):
            raise ClientFault("SerializationException", "a BOOL value must be true or false")
    elif kind == "NULL":
        if v is not True:
            raise _invalid(
                "One or more parameter values were invalid: Null attribute value types must have the value of true"
            )
    elif kind in _SET_NAMES:
        _check_set(kind, v)
    elif kind == "L":
        if not isinstance(v, list):
            raise ClientFault("SerializationException", "an L value must be a JSON array")
        for element in v:
            check_value(element, depth + 1)
    elif kind == "M":
        if not isinstance(v, dict):
            raise ClientFault("SerializationException", "an M value must be a JSON object")
        for element in v.values():
            check_value(element, depth + 1)
    else:
        raise ClientFault("SerializationException", f"unknown attribute value type {kind!r:.40}")


def _check_set(kind: str, elements: Any) -> None:
    if not isinstance(elements, list):
        raise ClientFault("SerializationException", f"a {kind} value must be a JSON array")
    if not elements:
        if kind == "BS":  # DynamoDB words the binary set's rule apart from the other two
            raise _invalid("One or more parameter values were invalid: Binary sets should not be empty")
        raise _invalid(f"One or more parameter values were invalid: An {_SET_NAMES[kind]} set  may not be empty")
    if kind == "SS":
        if not all(isinstance(e, str) for e in elements):
            raise ClientFault("SerializationException", "SS elements must be JSON strings")
        seen: list[Any] = list(elements)
    elif kind == "NS":
        seen = [number(e) for e in elements]
    else:
        seen = [binary(e) for e in elements]
    if len(set(seen)) != len(seen):
        shown = ", ".join(str(e) for e in elements)
        raise _invalid(
            f"One or more parameter values were invalid: Input collection [{shown:.200}] contains duplicates."
        )


def check_item(item: Mapping[str, Any]) -> None:
    for value in item.values():
        check_value(value)


__all__ = ["MAX_DEPTH", "TYPES", "binary", "canonicalise", "check_item", "check_value", "number"]
