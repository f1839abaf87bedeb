"""A partition key value as one string: what the engine meters and throttles per partition, and
what a fault rule's ``key`` is matched against.

Both sides import it from here (the engine core and ``labkit.faults``), so they cannot disagree
on which key values are the same partition: ``{"N": "1"}`` and ``{"N": "1.0"}`` are one number,
one partition.
"""

from __future__ import annotations

import base64
import binascii
import decimal
from collections.abc import Mapping
from typing import Any

#: Wide enough for any number DynamoDB accepts (38 digits, exponents -130..125), exactly.
_CONTEXT = decimal.Context(prec=100, Emax=999999, Emin=-999999)


def canonical(value: Mapping[str, Any]) -> str:
    """One string per distinct key value: S as is, N normalised, B as base64 of its bytes.

    ``value`` is one DynamoDB attribute value the engine has already checked; a number that is
    not a number or a binary that is not base64 raises :class:`ValueError`.
    """
    ((kind, v),) = value.items()
    if kind == "N":
        try:
            n = decimal.Decimal(v, context=_CONTEXT)
        except (decimal.InvalidOperation, TypeError) as exc:
            raise ValueError(f"not a DynamoDB number: {v!r}") from exc
        if not n.is_finite():
            raise ValueError(f"not a DynamoDB number: {v!r}")
        return "0" if n.is_zero() else str(n.normalize(_CONTEXT))
    if kind == "B":
        try:
            return base64.b64encode(base64.b64decode(v, validate=True)).decode("ascii")
        except (binascii.Error, TypeError) as exc:
            raise ValueError(f"not base64: {v!r}") from exc
    return str(v)


__all__ = ["canonical"]
