"""Evaluate a parsed condition or filter on an item, and project an item, as DynamoDB does.

Items are plain DynamoDB JSON (``{"n": {"N": "5"}}``); binary values may be bytes or base64.
The rules (DynamoDB Developer Guide, "Comparison operator and function reference"):

* an operand whose path is missing makes a comparison false, except ``<>`` (true);
* ``=`` and ``<>`` compare any two values (different types are never equal); ``<``, ``<=``, ``>``,
  ``>=`` and BETWEEN only compare two numbers (numerically), two strings or two binaries (byte order);
* ``begins_with``: a string with a string prefix, a binary with a binary prefix;
* ``contains``: a substring, a binary inside a binary, an element of a set, an element of a list;
* ``size``: characters of a string, bytes of a binary, elements of a set, list or map (no size
  for numbers, booleans or nulls: the comparison is then false).
"""

from __future__ import annotations

import base64
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

from . import syntax as X

Names = Mapping[str, Any] | None
Values = Mapping[str, Any] | None
_ORDERED = ("N", "S", "B")


def as_bytes(raw: Any) -> bytes:
    """A binary value's bytes (stored values are bytes; request values are base64 text)."""
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    return base64.b64decode(raw)


def _name(part: str, names: Names) -> str:
    if part.startswith("#") and names:
        return str(names.get(part, part))
    return part


def resolve(item: Mapping[str, Any] | None, path: X.Path, names: Names) -> Any:
    """The attribute value at ``path`` in ``item``, or None."""
    if item is None:
        return None
    current: Any = None
    for i, part in enumerate(path.parts):
        if isinstance(part, int):
            elements = current.get("L") if isinstance(current, dict) else None
            if not isinstance(elements, list) or part >= len(elements):
                return None
            current = elements[part]
        else:
            members = item if i == 0 else (current.get("M") if isinstance(current, dict) else None)
            if not isinstance(members, Mapping):
                return None
            current = members.get(_name(part, names))
            if current is None:
                return None
    return current


def _kind(value: Any) -> str:
    return next(iter(value)) if isinstance(value, dict) and len(value) == 1 else ""


def _key(kind: str, raw: Any) -> Any:
    """What a scalar is compared by: a Decimal, a str or bytes."""
    if kind == "N":
        return decimal.Decimal(raw)
    if kind == "B":
        return as_bytes(raw)
    return raw


def equal(a: Any, b: Any) -> bool:
    """DynamoDB's ``=``: same type and same value (1 and 1.0 are one number; sets ignore order)."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    x, y = a[kind], b[kind]
    if kind in _ORDERED:
        return bool(_key(kind, x) == _key(kind, y))
    if kind in ("SS", "NS", "BS"):
        return {_key(kind[0], e) for e in x} == {_key(kind[0], e) for e in y}
    if kind == "L":
        return len(x) == len(y) and all(equal(p, q) for p, q in zip(x, y, strict=True))
    if kind == "M":
        return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
    return bool(x == y)


def _ordered(op: str, a: Any, b: Any) -> bool:
    kind = _kind(a)
    if kind not in _ORDERED or kind != _kind(b):
        return False
    x, y = _key(kind, a[kind]), _key(kind, b[kind])
    if op == "<":
        return bool(x < y)
    if op == "<=":
        return bool(x <= y)
    if op == ">":
        return bool(x > y)
    return bool(x >= y)


def _size(value: Any) -> Any:
    kind = _kind(value)
    if kind in ("S", "SS", "NS", "BS", "L", "M"):
        return {"N": str(len(value[kind]))}
    if kind == "B":
        return {"N": str(len(as_bytes(value[kind])))}
    return None


def operand(node: X.Operand, item: Mapping[str, Any] | None, names: Names, values: Values) -> Any:
    """An operand's attribute value (None when its path is missing or has no size)."""
    if isinstance(node, X.Value):
        return (values or {}).get(node.name)
    if isinstance(node, X.Size):
        found = resolve(item, node.path, names)
        return None if found is None else _size(found)
    return resolve(item, node, names)


def _contains(haystack: Any, needle: Any) -> bool:
    kind, other = _kind(haystack), _kind(needle)
    if kind == "S" and other == "S":
        return bool(needle["S"] in haystack["S"])
    if kind == "B" and other == "B":
        return as_bytes(needle["B"]) in as_bytes(haystack["B"])
    if kind in ("SS", "NS", "BS") and other == kind[0]:
        wanted = _key(other, needle[other])
        return any(_key(other, e) == wanted for e in haystack[kind])
    if kind == "L":
        return any(equal(e, needle) for e in haystack["L"])
    return False


def _call(node: X.Call, item: Mapping[str, Any] | None, names: Names, values: Values) -> bool:
    args = [operand(a, item, names, values) for a in node.args]
    first = args[0]
    if node.name == "attribute_exists":
        return first is not None
    if node.name == "attribute_not_exists":
        return first is None
    second = args[1]
    if first is None or second is None:
        return False
    if node.name == "attribute_type":
        return _kind(second) == "S" and _kind(first) == second["S"]
    if node.name == "begins_with":
        kind = _kind(first)
        if kind == "S" and _kind(second) == "S":
            return bool(first["S"].startswith(second["S"]))
        if kind == "B" and _kind(second) == "B":
            return as_bytes(first["B"]).startswith(as_bytes(second["B"]))
        return False
    return _contains(first, second)


def holds(node: X.Condition, item: Mapping[str, Any] | None, names: Names, values: Values) -> bool:
    """True if the condition holds for ``item`` (None: no item)."""
    if isinstance(node, X.And):
        return holds(node.left, item, names, values) and holds(node.right, item, names, values)
    if isinstance(node, X.Or):
        return holds(node.left, item, names, values) or holds(node.right, item, names, values)
    if isinstance(node, X.Not):
        return not holds(node.inner, item, names, values)
    if isinstance(node, X.Call):
        return _call(node, item, names, values)
    if isinstance(node, X.Compare):
        left, right = operand(node.left, item, names, values), operand(node.right, item, names, values)
        if left is None or right is None:
            return node.op == "<>"
        if node.op == "=":
            return equal(left, right)
        if node.op == "<>":
            return not equal(left, right)
        return _ordered(node.op, left, right)
    if isinstance(node, X.Between):
        subject, low, high = (operand(n, item, names, values) for n in (node.subject, node.low, node.high))
        if subject is None or low is None or high is None:
            return False
        return _ordered(">=", subject, low) and _ordered("<=", subject, high)
    subject = operand(node.subject, item, names, values)
    if subject is None:
        return False
    return any((option := operand(o, item, names, values)) is not None and equal(subject, option) for o in node.options)


def project(item: Mapping[str, Any], paths: Sequence[X.Path], names: Names) -> dict[str, Any]:
    """``item`` reduced to ``paths`` (ProjectionExpression): nested maps kept, list elements in index order."""
    tree: dict[str, Any] = {}
    for path in paths:
        value = resolve(item, path, names)
        if value is None:
            continue
        parts = [p if isinstance(p, int) else _name(p, names) for p in path.parts]
        node: dict[Any, Any] = tree
        for part, following in zip(parts, parts[1:], strict=False):
            child = node.get(part)
            if not isinstance(child, _Branch):
                child = node[part] = _Branch("L" if isinstance(following, int) else "M")
            node = child.members
        node[parts[-1]] = value
    return {name: _build(value) for name, value in tree.items()}


class _Branch:
    """A map or list being rebuilt by :func:`project`."""

    __slots__ = ("kind", "members")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.members: dict[Any, Any] = {}


def _build(value: Any) -> Any:
    if not isinstance(value, _Branch):
        return value
    if value.kind == "L":
        return {"L": [_build(value.members[i]) for i in sorted(value.members)]}
    return {"M": {k: _build(v) for k, v in value.members.items()}}


__all__ = ["Names", "Values", "as_bytes", "equal", "holds", "operand", "project", "resolve"]
