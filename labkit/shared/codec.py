"""The one item codec: plain Python values <-> DynamoDB's wire form.

Built on boto3's own ``TypeSerializer`` / ``TypeDeserializer``; what labkit adds is a clear
:class:`~labkit.shared.errors.ValidationError` (naming the attribute) where boto3 or botocore would
leak ``TypeError: Float types are not supported``, ``decimal.Inexact`` for an integer over
38 digits, or a ``UnicodeEncodeError`` for a lone surrogate when the request is sent.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from . import constants as C
from .errors import ValidationError

_SER = TypeSerializer()
_DESER = TypeDeserializer()


def _check_text(name: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValidationError(
            f"{name} contains a lone surrogate U+{ord(bad):04X} at position {exc.start}: it is not valid "
            "Unicode and cannot be sent to DynamoDB; nothing was written. Fix how the text was decoded."
        ) from exc


def _check(name: str, value: Any) -> None:
    """Reject what DynamoDB cannot store, before boto3 or botocore fails obscurely."""
    if isinstance(value, float):
        raise ValidationError(
            f"{name} is the float {value!r}: DynamoDB numbers are exact; pass an int or "
            f"decimal.Decimal({str(value)!r}). Nothing was written"
        )
    if isinstance(value, str):
        _check_text(name, value)
    elif isinstance(value, bytes | bytearray | bool) or value is None or isinstance(value, int | Decimal):
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                _check_text(f"{name}.{k}", k)
            _check(f"{name}.{k}", v)
    elif isinstance(value, list | tuple | set | frozenset):
        for i, v in enumerate(value):
            _check(f"{name}[{i}]", v)


def serialize(value: Any, name: str = "value") -> dict[str, Any]:
    """One Python value as a DynamoDB attribute value (``{"S": ...}``, ``{"N": ...}``, ...)."""
    _check(name, value)
    try:
        return dict(_SER.serialize(value))
    except (decimal.Inexact, decimal.Rounded) as exc:
        raise ValidationError(
            f"{name} is a number with more than {C.MAX_NUMBER_DIGITS} significant digits, more than DynamoDB stores; "
            "store it as a string. Nothing was written"
        ) from exc
    except TypeError as exc:
        raise ValidationError(f"{name}: {exc}; nothing was written") from exc


def to_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item of plain Python values in DynamoDB's wire form."""
    for key in item:
        _check_text("attribute name", str(key))
    return {k: serialize(v, k) for k, v in item.items()}


def from_wire(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item in wire form as Python values (numbers as ``Decimal``, as boto3 gives them)."""
    return {k: _DESER.deserialize(v) for k, v in item.items()}


def plain(value: Any) -> Any:
    """Decimals as int when whole, else float; containers recursively (for tables and plots)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, set):
        return {plain(v) for v in value}
    return value


def plain_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item in wire form as plain Python values (ints, floats, str, ...)."""
    return {k: plain(v) for k, v in from_wire(item).items()}


__all__ = ["from_wire", "plain", "plain_item", "serialize", "to_wire"]
