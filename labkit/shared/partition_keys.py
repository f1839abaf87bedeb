"""A key value as one string: the engine's item identity, and the race lab's.

The engine meters, throttles and stores per key value; a fault rule's ``key`` is matched against
it; the race lab (``labkit.races.identity``) decides which calls touch one item with it. All of
them import it from here, so they cannot disagree on which key values are the same item:
``{"N": "1"}``, ``{"N": "1.0"}``, ``{"N": "1E0"}`` and ``{"N": "-0"}``/``{"N": "0"}`` are one number
each (:func:`labkit.shared.numbers.canonical`), one item.

:func:`canonical` reads a value as it travels on the wire (a B value is base64 text);
:func:`canonical_sent` reads one as an SDK call holds it before botocore serialises it — a B value
as ``bytes``, or as ``str``, which botocore sends as its UTF-8 bytes (``_get_base64`` in
``botocore/serialize.py``), never as base64 it decodes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from . import numbers


def canonical(value: Mapping[str, Any]) -> str:
    """One string per distinct key value: S as is, N as DynamoDB stores it (:func:`labkit.shared.numbers.canonical`),
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


def canonical_sent(value: object) -> tuple[str, str] | None:
    """``(type, canonical string)`` of a key value as a botocore call's parameters hold it; None if unreadable.

    ``{"B": "key0"}`` and ``{"B": b"key0"}`` are one item (botocore sends the text's UTF-8 bytes);
    ``{"N": "-0"}`` and ``{"N": "0"}`` are one. A value DynamoDB would refuse (not a number, not a
    key type, not one type) is None: the caller widens what it touches, never narrows it.
    """
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    ((kind, raw),) = value.items()
    if kind == "S" and isinstance(raw, str):
        return ("S", raw)
    if kind == "N" and isinstance(raw, str):  # botocore refuses any other type before sending
        try:
            return ("N", numbers.canonical(raw))
        except numbers.NumberError:
            return None
    if kind == "B" and isinstance(raw, str | bytes | bytearray):
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        return ("B", base64.b64encode(data).decode("ascii"))
    return None


__all__ = ["canonical", "canonical_sent"]
