"""Call keys: a short string naming the item(s) a DynamoDB call touches (the history's ``key`` column).

An item is named by its table's key schema (``schema_of``: the table's (hash, range) attribute names,
from DescribeTable, as :mod:`~labkit.races.identity` reads them for the reduction): a PutItem of
``{"pk": "PAYMENT#p-1", "account": "acme"}`` on a table keyed ``pk`` is ``PAYMENT#p-1``. Only a
table whose schema cannot be read (it does not exist: the call fails with ResourceNotFoundException)
falls back to a guess: ``PK``/``SK``, else the first attribute(s) by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..shared.catalogue import Op

if TYPE_CHECKING:
    from .identity import KeyNames

#: A table's name -> its key attributes (hash, range or None), or None when they cannot be read.
KeySchemaOf = Callable[[str], "KeyNames | None"]

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


def _guess(attrs: Mapping[str, Any]) -> list[str]:
    """The key attributes of a table whose schema cannot be read: ``PK``/``SK``, else the first by name."""
    if "PK" in attrs:
        return ["PK", "SK"] if "SK" in attrs else ["PK"]
    return sorted(attrs)[:2] if len(attrs) <= 2 else sorted(attrs)[:1]


def _key_string(table: Any, attrs: Mapping[str, Any] | None, schema_of: KeySchemaOf | None) -> str:
    """The item's key values, hash first, as ``"ACCT#1/PROFILE"``."""
    if not attrs:
        return ""
    names = schema_of(table) if schema_of is not None and isinstance(table, str) else None
    if names is not None:
        wanted = [n for n in names if n is not None]
        if all(n in attrs for n in wanted):
            return "/".join(_value(attrs[n]) for n in wanted)
    return "/".join(_value(attrs[n]) for n in _guess(attrs))


def _transact_key(entry: Mapping[str, Any], schema_of: KeySchemaOf | None) -> str:
    ((action, body),) = entry.items()
    return _key_string(body.get("TableName"), body.get("Key") or body.get("Item"), schema_of)


def call_key(operation: str, params: Mapping[str, Any], schema_of: KeySchemaOf | None = None) -> str:
    """A short string naming the item(s) a call touches (Key, Item, TransactItems, query values).

    ``schema_of`` maps a table's name to its key attributes (the race lab passes DescribeTable's);
    without it, or for a table it cannot describe, the key attributes are guessed (module docstring).
    """
    table = params.get("TableName")
    if "Key" in params:
        return _key_string(table, params["Key"], schema_of)
    if "Item" in params:
        return _key_string(table, params["Item"], schema_of)
    if "TransactItems" in params:
        return "; ".join(_transact_key(e, schema_of) for e in params["TransactItems"])
    if operation == Op.QUERY:
        values = params.get("ExpressionAttributeValues") or {}
        return "/".join(_value(values[k]) for k in sorted(values))
    if "RequestItems" in params:
        n = sum(len(v) if isinstance(v, list) else len(v.get("Keys", [])) for v in params["RequestItems"].values())
        return f"{n} items"
    return ""


__all__ = ["call_key"]
