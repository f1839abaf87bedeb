"""Call keys: a short string naming the item(s) a DynamoDB call touches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..operations import Op

if TYPE_CHECKING:
    pass

# ---------------------------------------------------------------- call keys


def _value(av: Any) -> str:
    """One DynamoDB attribute value as a short string."""
    if isinstance(av, Mapping) and len(av) == 1:
        kind, raw = next(iter(av.items()))
        if kind in ("S", "N"):
            return str(raw)
        if kind == "BOOL":
            return str(raw).lower()
        if kind == "NULL":
            return "null"
        return f"<{kind}>"
    return str(av)


def _key_string(attrs: Mapping[str, Any] | None) -> str:
    """PK/SK (or whatever key attributes there are) as ``"ACCT#1/PROFILE"``."""
    if not attrs:
        return ""
    if "PK" in attrs:
        names = ["PK", "SK"] if "SK" in attrs else ["PK"]
    else:
        names = sorted(attrs)[:2] if len(attrs) <= 2 else sorted(attrs)[:1]
    return "/".join(_value(attrs[n]) for n in names)


def _transact_key(entry: Mapping[str, Any]) -> str:
    ((action, body),) = entry.items()
    return _key_string(body.get("Key") or body.get("Item"))


def call_key(operation: str, params: Mapping[str, Any]) -> str:
    """A short string naming the item(s) a call touches (Key, Item, TransactItems, query values)."""
    if "Key" in params:
        return _key_string(params["Key"])
    if "Item" in params:
        return _key_string(params["Item"])
    if "TransactItems" in params:
        return "; ".join(_transact_key(e) for e in params["TransactItems"])
    if operation == Op.QUERY:
        values = params.get("ExpressionAttributeValues") or {}
        return "/".join(_value(values[k]) for k in sorted(values))
    if "RequestItems" in params:
        n = sum(len(v) if isinstance(v, list) else len(v.get("Keys", [])) for v in params["RequestItems"].values())
        return f"{n} items"
    return ""


__all__ = ["call_key"]
