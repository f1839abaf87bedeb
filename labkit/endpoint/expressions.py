"""Syntax of DynamoDB's condition, filter, key-condition and projection expressions.

A small tokenizer and recursive-descent parser, so that a malformed expression is a
``ValidationException`` worded as DynamoDB words it (``Invalid ConditionExpression: Syntax
error; token: "<EOF>", near: "PK"``), before moto's parser (which raises ValueError, KeyError
or AssertionError on them) sees it. Update expressions are parsed by moto, whose parser reports
syntax errors properly; here only their placeholders are checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .encode import ClientFault

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+|:[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)"
    r"|(?P<op><>|<=|>=|[=<>(),.\[\]])|(?P<bad>\S))"
)
_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN"}
_COMPARATORS = {"=", "<>", "<", "<=", ">", ">="}
_CONDITION_FUNCTIONS = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
}
_EOF = "<EOF>"


@dataclass
class Parsed:
    """What an expression refers to: placeholders, and (key conditions) ``path = value`` pairs."""

    names: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    equalities: list[tuple[str, str]] = field(default_factory=list)  # (first path element, :value)
    comparisons: list[tuple[str, str]] = field(default_factory=list)  # every (path, :value) compared
    operators: set[str] = field(default_factory=set)


class _Parser:
    def __init__(self, label: str, text: str) -> None:
        self.label = label
        self.text = text
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:  # only trailing whitespace is left
                break
            pos = match.end()
            token = match.group(match.lastgroup or "bad")
            self.tokens.append(token)
            if match.lastgroup == "bad":
                break
        self.i = 0
        self.out = Parsed()

    def fail(self, message: str) -> ClientFault:
        return ClientFault("ValidationException", f"Invalid {self.label}: {message}")

    def syntax(self) -> ClientFault:
        token = self.peek()
        before = self.tokens[self.i - 1] if self.i > 0 else ""
        near = before + (token if token != _EOF else "")
        return self.fail(f'Syntax error; token: "{token}", near: "{near}"')

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else _EOF

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token == _EOF or (expected is not None and token.upper() != expected):
            raise self.syntax()
        self.i += 1
        return token

    def done(self) -> None:
        if self.peek() != _EOF:
            raise self.syntax()

    # operands -------------------------------------------------------------------------------
    def _is_name(self, token: str) -> bool:
        return (
            token != _EOF
            and (token[0] == "#" or token[0].isalpha() or token[0] == "_")
            and token.upper() not in _KEYWORDS
        )

    def path(self) -> str:
        token = self.peek()
        if not self._is_name(token) or token.startswith(":"):
            raise self.syntax()
        first = self.take()
        if first.startswith("#"):
            self.out.names.add(first)
        while self.peek() in (".", "["):
            if self.take() == ".":
                part = self.peek()
                if not self._is_name(part) or part.startswith(":"):
                    raise self.syntax()
                self.take()
                if part.startswith("#"):
                    self.out.names.add(part)
            else:
                if not self.peek().isdigit():
                    raise self.syntax()
                self.take()
                self.take("]")
        return first

    def operand(self) -> str:
        token = self.peek()
        if token.startswith(":"):
            self.out.values.add(self.take())
            return token
        if token.lower() == "size" and self.peek(1) == "(":
            self.take()
            self.take("(")
            self.path()
            self.take(")")
            return "size()"
        if self.peek(1) == "(" and self._is_name(token):
            raise self.fail(f"Invalid function name; function: {token}")
        return self.path()

    # conditions -----------------------------------------------------------------------------
    def condition(self) -> None:
        self.conjunction()
        while self.peek().upper() == "OR":
            self.out.operators.add("OR")
            self.take()
            self.conjunction()

    def conjunction(self) -> None:
        self.negation()
        while self.peek().upper() == "AND":
            self.take()
            self.negation()

    def negation(self) -> None:
        if self.peek().upper() == "NOT":
            self.out.operators.add("NOT")
            self.take()
            self.negation()
            return
        if self.peek() == "(":
            self.take()
            self.condition()
            self.take(")")
            return
        token = self.peek()
        if self.peek(1) == "(" and token.lower() != "size":
            self.function(token)
            return
        left = self.operand()
        op = self.peek().upper()
        if op in _COMPARATORS:
            self.take()
            right = self.operand()
            self.out.operators.add(op)
            for a, b in ((left, right), (right, left)):
                if b.startswith(":") and not a.startswith(":") and a != "size()":
                    self.out.comparisons.append((a, b))
                    if op == "=":
                        self.out.equalities.append((a, b))
        elif op == "BETWEEN":
            self.out.operators.add(op)
            self.take()
            low = self.operand()
            self.take("AND")
            high = self.operand()
            self.out.comparisons.extend((left, v) for v in (low, high) if v.startswith(":"))
        elif op == "IN":
            self.out.operators.add(op)
            self.take()
            self.take("(")
            self.operand()
            while self.peek() == ",":
                self.take()
                self.operand()
            self.take(")")
        else:
            raise self.syntax()

    def function(self, name: str) -> None:
        arity = _CONDITION_FUNCTIONS.get(name)
        if arity is None:
            raise self.fail(f"Invalid function name; function: {name}")
        self.out.operators.add(name)
        self.take()
        self.take("(")
        first = self.path()
        args = 1
        while self.peek() == ",":
            self.take()
            second = self.operand()
            args += 1
            if name == "begins_with" and second.startswith(":"):
                self.out.comparisons.append((first, second))
        self.take(")")
        if args != arity:
            raise self.fail(
                f"Incorrect number of operands for operator or function; operator or function: {name}, "
                f"number of operands: {args}"
            )


def _parse(label: str, text: str, projection: bool = False) -> Parsed:
    parser = _Parser(label, text)
    if not parser.tokens:
        raise parser.fail("The expression can not be empty;")
    if projection:
        parser.path()
        while parser.peek() == ",":
            parser.take()
            parser.path()
    else:
        parser.condition()
    parser.done()
    return parser.out


def condition(label: str, text: str) -> Parsed:
    """Parse a ConditionExpression or FilterExpression (``label`` names it in messages)."""
    return _parse(label, text)


def key_condition(text: str) -> Parsed:
    """Parse a KeyConditionExpression: a condition using only =, <, <=, >, >=, BETWEEN, begins_with, AND."""
    parsed = _parse("KeyConditionExpression", text)
    for op in ("OR", "NOT", "IN", "<>", "attribute_exists", "attribute_not_exists", "attribute_type", "contains"):
        if op in parsed.operators:
            raise ClientFault(
                "ValidationException",
                f"Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: {op}",
            )
    return parsed


def projection(text: str) -> Parsed:
    """Parse a ProjectionExpression: paths separated by commas."""
    return _parse("ProjectionExpression", text, projection=True)


_NAME_PLACEHOLDER = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_PLACEHOLDER = re.compile(r":[A-Za-z0-9_]+")


def update_placeholders(text: str) -> Parsed:
    """The placeholders an UpdateExpression uses (moto parses its syntax)."""
    if not text.strip():
        raise ClientFault("ValidationException", "Invalid UpdateExpression: The expression can not be empty;")
    return Parsed(set(_NAME_PLACEHOLDER.findall(text)), set(_VALUE_PLACEHOLDER.findall(text)))


def check_placeholders(
    label: str, parsed: Parsed, names: Mapping[str, Any] | None, values: Mapping[str, Any] | None
) -> None:
    """Every placeholder ``parsed`` uses must be defined (names first, then values)."""
    for used, defined, problem in (
        (parsed.names, names, "An expression attribute name used in the document path is not defined; attribute name"),
        (parsed.values, values, "An expression attribute value used in expression is not defined; attribute value"),
    ):
        for placeholder in sorted(used):
            if defined is None or placeholder not in defined:
                raise ClientFault("ValidationException", f"Invalid {label}: {problem}: {placeholder}")


def unused(given: Iterable[str], used: set[str]) -> list[str]:
    return [k for k in given if k not in used]


__all__ = ["Parsed", "check_placeholders", "condition", "key_condition", "projection", "update_placeholders"]
