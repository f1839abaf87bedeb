"""Item sizes and capacity units, by DynamoDB's documented rules.

Item size (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):

* each attribute name counts its UTF-8 length;
* String: UTF-8 length; Binary: raw byte length;
* Number: about 1 byte per two significant digits, plus 1 byte;
* Boolean and Null: 1 byte;
* List and Map: 3 bytes, plus 1 byte per element, plus the elements (map keys count as names);
* sets: the sum of their elements.

Read units: 4 KB steps (strongly consistent 1 unit, eventually consistent 0.5).
Write units: 1 KB steps. Transactions cost twice.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from decimal import Context, Decimal
from typing import Any

from .constants import READ_UNIT_BYTES, WRITE_UNIT_BYTES

AttributeValue = Mapping[str, Any]
_EXACT = Context(prec=100, Emax=999999, Emin=-999999)  # DynamoDB numbers have up to 38 digits: never round
Item = Mapping[str, AttributeValue]


def _number_size(text: str) -> int:
    """Bytes DynamoDB counts for a number: (significant digits + 1) // 2, plus 1."""
    digits = str(Decimal(text).normalize(_EXACT)).lstrip("-")
    if "E" in digits:  # 1E+5 -> mantissa only
        digits = digits.split("E")[0]
    significant = digits.replace(".", "").lstrip("0") or "0"
    significant = significant.rstrip("0") or "0"
    return (len(significant) + 1) // 2 + 1


def _binary_size(value: Any) -> int:
    """Raw byte length of a binary value: bytes as they are, a str as the base64 of DynamoDB JSON."""
    if isinstance(value, str):
        return len(base64.b64decode(value))
    return len(value if isinstance(value, bytes | bytearray) else bytes(value))


def value_size(value: AttributeValue) -> int:
    """Size in bytes of one typed attribute value (``{"S": "x"}`` form)."""
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return _binary_size(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(_number_size(n) for n in v)
    if kind == "BS":
        return sum(_binary_size(b) for b in v)
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + value_size(e) for k, e in v.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: Item | None) -> int:
    """Size in bytes of an item in DynamoDB's wire form (``{"PK": {"S": "..."}, ...}``)."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(v) for name, v in item.items())


def python_item_size(item: Mapping[str, Any]) -> int:
    """Size of an item given as plain Python values (serialised by labkit's one codec)."""
    from .codec import to_wire

    return item_size(to_wire(item))


def read_units(size: int, *, consistent: bool = False) -> float:
    """Read units for reading ``size`` bytes: 4 KB steps, half for eventually consistent."""
    steps = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(steps) if consistent else steps / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    """Write units for writing ``size`` bytes: 1 KB steps, twice inside a transaction."""
    steps = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return float(steps * (2 if transactional else 1))


def total_read_units(sizes: Iterable[int], *, consistent: bool = False) -> float:
    """Query/Scan: read units on the total size read, not per item."""
    total = sum(sizes)
    steps = max(1, math.ceil(total / READ_UNIT_BYTES))
    return float(steps) if consistent else steps / 2


__all__ = ["item_size", "python_item_size", "read_units", "total_read_units", "value_size", "write_units"]
