"""DynamoDB attribute values (``{"S": "x"}``, ``{"NS": ["1"]}``, ...): what DynamoDB accepts.

* exactly one type per value, and the JSON type that type needs;
* numbers: at most 38 significant digits, magnitude 1E-130 .. 9.9999999999999999999999999999999999999E+125 (or 0);
* binary: base64; sets: not empty, no duplicates (``1`` and ``1.0`` are the same number);
* documents nested at most 32 levels.
"""

from __future__ import annotations

import base64
import binascii
import decimal
from collections.abc import Mapping
from typing import Any

from .. import constants as C
from .encode import ClientFault

MAX_DEPTH = C.MAX_DOCUMENT_DEPTH
_SMALLEST = decimal.Decimal(C.SMALLEST_NUMBER)
_LARGEST = decimal.Decimal(C.LARGEST_NUMBER)
_CONTEXT = decimal.Context(prec=100, Emax=999999, Emin=-999999)
_SET_NAMES = {"SS": "string", "NS": "number", "BS": "binary"}
TYPES = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", message)


def number(text: Any) -> decimal.Decimal:
    """The Decimal DynamoDB stores for ``text``; ClientFault if DynamoDB refuses it."""
    if not isinstance(text, str):
        raise ClientFault("SerializationException", f"a number must be sent as a JSON string, not {text!r}")
    try:
        value = decimal.Decimal(text.strip(), context=_CONTEXT)
    except decimal.InvalidOperation as exc:
        raise _invalid("A value provided cannot be converted into a number") from exc
    if not value.is_finite() or text.strip() != text or not text:
        raise _invalid("A value provided cannot be converted into a number")
    if value.is_zero():
        return value
    digits = value.normalize(_CONTEXT).as_tuple().digits
    if len(digits) > C.MAX_NUMBER_DIGITS:
        raise _invalid("Attempting to store more than 38 significant digits in a Number")
    if abs(value) > _LARGEST:
        raise _invalid("Number overflow. Attempting to store a number with magnitude larger than supported range")
    if abs(value) < _SMALLEST:
        raise _invalid("Number underflow. Attempting to store a number with magnitude smaller than supported range")
    return value


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


__all__ = ["MAX_DEPTH", "TYPES", "binary", "check_item", "check_value", "number"]
