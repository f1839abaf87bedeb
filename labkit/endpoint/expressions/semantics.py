"""What DynamoDB checks in a condition once its placeholders are known, before any item is read.

* ``<``, ``<=``, ``>``, ``>=`` and BETWEEN order numbers, strings and binaries only: another value
  type is "Incorrect operand type for operator or function; operator or function: <, operand
  type: BOOL"; ``begins_with`` takes a string or binary value;
* a comparison or function whose operands are the same path is "The first operand must be
  distinct from the remaining operands for this operator or function; operator: contains, first
  operand: [data]" (the path's names resolved).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ClientFault
from . import syntax as X

_ORDERED = frozenset({"<", "<=", ">", ">="})
_ORDERABLE = frozenset({"N", "S", "B"})


def _kind(value: Any) -> str:
    return next(iter(value)) if isinstance(value, dict) and len(value) == 1 else ""


def _resolved(path: X.Path, names: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(f"[{p}]" if isinstance(p, int) else str(names.get(p, p)) for p in path.parts)


class _Checker:
    def __init__(self, label: str, names: Mapping[str, Any], values: Mapping[str, Any]) -> None:
        self.label, self.names, self.values = label, names, values

    def fail(self, message: str) -> ClientFault:
        return ClientFault("ValidationException", f"Invalid {self.label}: {message}")

    def operand_type(self, operator: str, operands: tuple[X.Operand, ...], allowed: frozenset[str]) -> None:
        for node in operands:
            kind = _kind(self.values.get(node.name)) if isinstance(node, X.Value) else ""
            if kind and kind not in allowed:
                raise self.fail(
                    "Incorrect operand type for operator or function; operator or function: "
                    f"{operator}, operand type: {kind}"
                )

    def distinct(self, operator: str, operands: tuple[X.Operand, ...]) -> None:
        first, *rest = operands
        if not isinstance(first, X.Path):
            return
        path = _resolved(first, self.names)
        if any(isinstance(other, X.Path) and _resolved(other, self.names) == path for other in rest):
            raise self.fail(
                "The first operand must be distinct from the remaining operands for this operator or function; "
                f"operator: {operator}, first operand: [{', '.join(path)}]"
            )

    def check(self, node: X.Condition) -> None:
        if isinstance(node, X.And | X.Or):
            self.check(node.left)
            self.check(node.right)
        elif isinstance(node, X.Not):
            self.check(node.inner)
        elif isinstance(node, X.Compare):
            self.distinct(node.op, (node.left, node.right))
            if node.op in _ORDERED:
                self.operand_type(node.op, (node.left, node.right), _ORDERABLE)
        elif isinstance(node, X.Between):
            self.distinct("BETWEEN", (node.subject, node.low, node.high))
            self.operand_type("BETWEEN", (node.subject, node.low, node.high), _ORDERABLE)
        elif isinstance(node, X.In):
            self.distinct("IN", (node.subject, *node.options))
        elif node.name in ("begins_with", "contains"):
            self.distinct(node.name, node.args)
            if node.name == "begins_with":
                self.operand_type(node.name, node.args[1:], frozenset({"S", "B"}))


def attribute_names(node: X.Condition, names: Mapping[str, Any]) -> set[str]:
    """The top-level attribute names a condition reads (``#n`` resolved)."""
    if isinstance(node, X.And | X.Or):
        return attribute_names(node.left, names) | attribute_names(node.right, names)
    if isinstance(node, X.Not):
        return attribute_names(node.inner, names)
    if isinstance(node, X.Compare):
        operands: tuple[X.Operand, ...] = (node.left, node.right)
    elif isinstance(node, X.Between):
        operands = (node.subject, node.low, node.high)
    elif isinstance(node, X.In):
        operands = (node.subject, *node.options)
    else:
        operands = node.args
    paths = [o.path if isinstance(o, X.Size) else o for o in operands]
    return {str(names.get(str(p.parts[0]), p.parts[0])) for p in paths if isinstance(p, X.Path)}


def check_condition(label: str, parsed: X.Parsed, names: Any, values: Any) -> None:
    """Raise DynamoDB's ValidationException for a condition it refuses before reading an item."""
    if parsed.tree is not None:
        _Checker(
            label, names if isinstance(names, Mapping) else {}, values if isinstance(values, Mapping) else {}
        ).check(parsed.tree)


__all__ = ["attribute_names", "check_condition"]
