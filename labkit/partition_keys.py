"""A partition key value as one string: what the engine meters and throttles per partition, and
what a fault rule's ``key`` is matched against.

Both sides import it from here (the engine core and ``labkit.faults``), so they cannot disagree
on which key values are the same partition: ``{"N": "1"}`` and ``{"N": "1.0"}`` are one number,
one partition.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from . import numbers


def canonical(value: Mapping[str, Any]) -> str:
    """One string per distinct key value: S as is, N as DynamoDB stores it (:func:`labkit.numbers.canonical`),
    B as base64 of its bytes.

    ``value`` is one DynamoDB attribute value the engine has already checked; a number that is
    not a number or a binary that is not base64 raises :class:`ValueError`.
    """
    ((kind, v),) = value.items()
    if kind == "N":
        try:
            return numbers.canonical(v)
        except (numbers.NumberError, TypeError) as exc:
            raise ValueError(f"not a DynamoDB number: {v!r}") from exc
    if kind == "B":
        try:
            return base64.b64encode(base64.b64decode(v, validate=True)).decode("ascii")
        except (binascii.Error, TypeError) as exc:
            raise ValueError(f"not base64: {v!r}") from exc
    return str(v)


__all__ = ["canonical"]
