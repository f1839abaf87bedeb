"""Syntax of DynamoDB's condition, filter, key-condition and projection expressions, as a tree.

A small tokenizer and recursive-descent parser: a malformed expression is a
``ValidationException`` worded as DynamoDB words it (``Invalid ConditionExpression: Syntax
error; token: "<EOF>", near: "PK"``); an attribute name that is one of DynamoDB's reserved
words is refused (``Attribute name is a reserved keyword; reserved keyword: name``). The tree
(:class:`Compare`, :class:`Call`, :class:`And`, ...) is what :mod:`labkit.endpoint.expressions.evaluate`
evaluates; placeholders (``#n``, ``:v``) stay unresolved in it.

"near" is the failing token with the significant token before and after it, as they appear in
the text (``SET n :v`` fails at ``:v`` near ``n :v``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ClientFault
from .reserved import is_reserved

_TOKEN = re.compile(
    r"(?P<name>#[A-Za-z0-9_]+|:[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)"
    r"|(?P<op><>|<=|>=|[=<>(),.\[\]+-])|(?P<space>\s+)"
)
_KEYWORDS = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN"})
_COMPARATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
#: Condition functions and their number of operands.
FUNCTIONS = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
}
EOF = "<EOF>"


# --- the tree ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Path:
    """A document path: names (``#n`` placeholders unresolved) and list indexes."""

    parts: tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Value:
    """An ExpressionAttributeValues placeholder (``:v``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Size:
    """``size(path)``."""

    path: Path


Operand = Path | Value | Size


@dataclass(frozen=True, slots=True)
class Compare:
    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True)
class Between:
    subject: Operand
    low: Operand
    high: Operand


@dataclass(frozen=True, slots=True)
class In:
    subject: Operand
    options: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Call:
    """A condition function: attribute_exists, attribute_not_exists, attribute_type, begins_with, contains."""

    name: str
    args: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class And:
    left: Condition
    right: Condition


@dataclass(frozen=True, slots=True)
class Or:
    left: Condition
    right: Condition


@dataclass(frozen=True, slots=True)
class Not:
    inner: Condition


Condition = Compare | Between | In | Call | And | Or | Not


@dataclass
class Parsed:
    """An expression's tree and what it refers to: placeholders, and (key conditions) comparisons."""

    names: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)
    equalities: list[tuple[str, str]] = field(default_factory=list)  # (first path element, :value)
    comparisons: list[tuple[str, str]] = field(default_factory=list)  # every (path, :value) compared
    operators: set[str] = field(default_factory=set)
    tree: Condition | None = None  # conditions and filters
    paths: tuple[Path, ...] = ()  # projections


# --- tokens --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    start: int
    end: int
    bad: bool = False


def tokenize(text: str) -> list[Token]:
    """Significant tokens; a character no token starts with ends the list as a ``bad`` token."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            tokens.append(Token(text[pos], pos, pos + 1, bad=True))
            break
        if match.lastgroup != "space":
            tokens.append(Token(match.group(), match.start(), match.end()))
        pos = match.end()
    return tokens


class Parser:
    """Shared by the condition parser here and the update-expression parser."""

    def __init__(self, label: str, text: str) -> None:
        self.label = label
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.out = Parsed()

    def fail(self, message: str) -> ClientFault:
        return ClientFault("ValidationException", f"Invalid {self.label}: {message}")

    def syntax(self) -> ClientFault:
        """DynamoDB's syntax error at the current token."""
        tokens, i = self.tokens, self.i
        start = tokens[i - 1].start if i > 0 else (tokens[i].start if i < len(tokens) else 0)
        if i >= len(tokens):
            return self.fail(f'Syntax error; token: "{EOF}", near: "{self.text[start:] if i else ""}"')
        token = tokens[i]
        if token.bad:  # a character no token starts with: DynamoDB shows it with the one after it
            end = token.end + 1 if token.end < len(self.text) and not self.text[token.end].isspace() else token.end
        else:
            end = tokens[i + 1].end if i + 1 < len(tokens) else token.end
        return self.fail(f'Syntax error; token: "{token.text}", near: "{self.text[start:end]}"')

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        if j >= len(self.tokens) or self.tokens[j].bad:
            return EOF if j >= len(self.tokens) else "\x00"
        return self.tokens[j].text

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token in (EOF, "\x00") or (expected is not None and token.upper() != expected):
            raise self.syntax()
        self.i += 1
        return token

    def done(self) -> None:
        if self.i < len(self.tokens):
            raise self.syntax()

    # operands -------------------------------------------------------------------------------
    @staticmethod
    def is_name(token: str) -> bool:
        return token[:1] == "#" or ((token[:1].isalpha() or token[:1] == "_") and token.upper() not in _KEYWORDS)

    def _name(self) -> str:
        token = self.peek()
        if token in (EOF, "\x00") or not self.is_name(token):
            raise self.syntax()
        self.take()
        if token.startswith("#"):
            self.out.names.add(token)
        elif is_reserved(token):
            raise self.fail(f"Attribute name is a reserved keyword; reserved keyword: {token}")
        return token

    def path(self) -> Path:
        parts: list[str | int] = [self._name()]
        while self.peek() in (".", "["):
            if self.take() == ".":
                parts.append(self._name())
            else:
                if not self.peek().isdigit():
                    raise self.syntax()
                parts.append(int(self.take()))
                self.take("]")
        return Path(tuple(parts))

    def operand(self) -> Operand:
        token = self.peek()
        if token.startswith(":"):
            self.out.values.add(self.take())
            return Value(token)
        if token.lower() == "size" and self.peek(1) == "(":
            self.take()
            self.take("(")
            inner = self.path()
            self.take(")")
            return Size(inner)
        if self.peek(1) == "(" and token not in (EOF, "\x00") and self.is_name(token):
            raise self.fail(f"Invalid function name; function: {token}")
        return self.path()


class _ConditionParser(Parser):
    # conditions -----------------------------------------------------------------------------
    def condition(self) -> Condition:
        node = self.conjunction()
        while self.peek().upper() == "OR":
            self.out.operators.add("OR")
            self.take()
            node = Or(node, self.conjunction())
        return node

    def conjunction(self) -> Condition:
        node = self.negation()
        while self.peek().upper() == "AND":
            self.take()
            node = And(node, self.negation())
        return node

    def negation(self) -> Condition:
        if self.peek().upper() == "NOT":
            self.out.operators.add("NOT")
            self.take()
            return Not(self.negation())
        if self.peek() == "(":
            self.take()
            if self.peek() == "(" and self._wraps_all():
                raise self.fail("The expression has redundant parentheses;")
            node = self.condition()
            self.take(")")
            return node
        token = self.peek()
        if self.peek(1) == "(" and token.lower() != "size" and token not in (EOF, "\x00"):
            return self.function(token)
        return self.comparison()

    def _wraps_all(self) -> bool:
        """At ``((``: does the inner parenthesis close right before the outer one does?"""
        depth = 0
        for j in range(self.i, len(self.tokens)):
            text = self.tokens[j].text
            depth += (text == "(") - (text == ")")
            if depth == 0:
                return j + 1 < len(self.tokens) and self.tokens[j + 1].text == ")"
        return False

    def comparison(self) -> Condition:
        left = self.operand()
        op = self.peek().upper()
        if op in _COMPARATORS:
            self.take()
            right = self.operand()
            self.out.operators.add(op)
            for a, b in ((left, right), (right, left)):
                if isinstance(b, Value) and isinstance(a, Path):
                    self.out.comparisons.append((_head(a), b.name))
                    if op == "=":
                        self.out.equalities.append((_head(a), b.name))
            return Compare(op, left, right)
        if op == "BETWEEN":
            self.out.operators.add(op)
            self.take()
            low = self.operand()
            self.take("AND")
            high = self.operand()
            if isinstance(left, Path):
                self.out.comparisons.extend((_head(left), v.name) for v in (low, high) if isinstance(v, Value))
            return Between(left, low, high)
        if op == "IN":
            self.out.operators.add(op)
            self.take()
            self.take("(")
            options = [self.operand()]
            while self.peek() == ",":
                self.take()
                options.append(self.operand())
            self.take(")")
            return In(left, tuple(options))
        raise self.syntax()

    def function(self, name: str) -> Condition:
        arity = FUNCTIONS.get(name)
        if arity is None:
            raise self.fail(f"Invalid function name; function: {name}")
        self.out.operators.add(name)
        self.take()
        self.take("(")
        args: list[Operand] = [self.path()]
        while self.peek() == ",":
            self.take()
            args.append(self.operand())
        self.take(")")
        if len(args) != arity:
            raise self.fail(
                f"Incorrect number of operands for operator or function; operator or function: {name}, "
                f"number of operands: {len(args)}"
            )
        first, *rest = args
        if name == "begins_with" and rest and isinstance(rest[0], Value) and isinstance(first, Path):
            self.out.comparisons.append((_head(first), rest[0].name))
        return Call(name, tuple(args))


def _head(path: Path) -> str:
    return str(path.parts[0])


def _parse(label: str, text: str, projection: bool = False) -> Parsed:
    parser = _ConditionParser(label, text)
    if not parser.tokens:
        raise parser.fail("The expression can not be empty;")
    if projection:
        paths = [parser.path()]
        while parser.peek() == ",":
            parser.take()
            paths.append(parser.path())
        parser.out.paths = tuple(paths)
    else:
        parser.out.tree = parser.condition()
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


def check_placeholders(
    label: str, parsed: Parsed, names: Mapping[str, Any] | None, values: Mapping[str, Any] | None
) -> None:
    """Every placeholder ``parsed`` uses must be defined (names first, then values)."""
    for used, defined, problem in (
        (parsed.names, names, "An expression attribute name used in the document path is not defined; attribute name"),
        (parsed.values, values, "An expression attribute value used in expression is not defined; attribute value"),
    ):
        for placeholder in sorted(used):
            if not isinstance(defined, Mapping) or placeholder not in defined:
                raise ClientFault("ValidationException", f"Invalid {label}: {problem}: {placeholder}")


__all__ = [
    "EOF",
    "FUNCTIONS",
    "And",
    "Between",
    "Call",
    "Compare",
    "Condition",
    "In",
    "Not",
    "Operand",
    "Or",
    "Parsed",
    "Parser",
    "Path",
    "Size",
    "Token",
    "Value",
    "check_placeholders",
    "condition",
    "key_condition",
    "projection",
    "tokenize",
]
