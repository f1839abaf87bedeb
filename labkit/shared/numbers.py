"""DynamoDB numbers: which it accepts, the one string it stores for each, and its arithmetic.

DynamoDB (Developer Guide, "Supported data types", Number): up to 38 significant digits
(leading and trailing zeros not counted), magnitudes from 1E-130 to
9.9999999999999999999999999999999999999E+125, or zero. It normalises a number on the way in:
``00042`` is stored as ``42``, ``1.0`` as ``1``, ``1.5E2`` as ``150``, ``-0`` as ``0``: a key
written as ``1.0`` and read as ``1`` is the same item. :func:`canonical` is that stored form
(plain digits, never an exponent). The engine (``labkit/endpoint/``) and the partition key
string (``labkit/shared/partition_keys.py``) both use it; it imports nothing of either.
"""

from __future__ import annotations

import decimal

from . import constants as C

#: Wide enough to hold any sum of two numbers DynamoDB accepts, exactly.
_CONTEXT = decimal.Context(prec=300, Emax=999999, Emin=-999999, traps=[decimal.InvalidOperation])
_SMALLEST = decimal.Decimal(C.SMALLEST_NUMBER)
_LARGEST = decimal.Decimal(C.LARGEST_NUMBER)

NOT_A_NUMBER = "A value provided cannot be converted into a number"
TOO_PRECISE = "Attempting to store more than 38 significant digits in a Number"
OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"


class NumberError(ValueError):
    """A number DynamoDB refuses; ``str(error)`` is DynamoDB's message."""


def _checked(value: decimal.Decimal) -> decimal.Decimal:
    """``value`` normalised (no trailing zeros), or NumberError with DynamoDB's words."""
    if not value.is_finite():
        raise NumberError(NOT_A_NUMBER)
    if value.is_zero():
        return decimal.Decimal(0)
    value = value.normalize(_CONTEXT)
    if value.copy_abs() > _LARGEST:
        raise NumberError(OVERFLOW)
    if value.copy_abs() < _SMALLEST:
        raise NumberError(UNDERFLOW)
    if len(value.as_tuple().digits) > C.MAX_NUMBER_DIGITS:
        raise NumberError(TOO_PRECISE)
    return value


def parse(text: str) -> decimal.Decimal:
    """The value of a number DynamoDB accepts, normalised; NumberError otherwise."""
    if not text or text.strip() != text:
        raise NumberError(NOT_A_NUMBER)
    try:
        value = decimal.Decimal(text, context=_CONTEXT)
    except (decimal.InvalidOperation, ValueError) as exc:
        raise NumberError(NOT_A_NUMBER) from exc
    return _checked(value)


def text(value: decimal.Decimal) -> str:
    """A normalised value as DynamoDB writes it: plain digits, no exponent, ``0`` for zero."""
    return "0" if value.is_zero() else format(value, "f")


def canonical(number: str) -> str:
    """The string DynamoDB stores for ``number`` (``1.50E1`` -> ``15``); NumberError if it refuses it."""
    return text(parse(number))


def add(a: str, b: str) -> str:
    """``a + b`` exactly (UpdateExpression ``+`` and ``ADD``); NumberError when the result is out of range."""
    return text(_checked(_CONTEXT.add(decimal.Decimal(a), decimal.Decimal(b))))


def subtract(a: str, b: str) -> str:
    """``a - b`` exactly (UpdateExpression ``-``); NumberError when the result is out of range."""
    return text(_checked(_CONTEXT.subtract(decimal.Decimal(a), decimal.Decimal(b))))


__all__ = [
    "NOT_A_NUMBER",
    "OVERFLOW",
    "TOO_PRECISE",
    "UNDERFLOW",
    "NumberError",
    "add",
    "canonical",
    "parse",
    "subtract",
    "text",
]
