"""PartiQL for DynamoDB, the statements a team's code sends: parsed into a small tree.

``SELECT * | path, ... FROM "table"[."index"] [WHERE condition]``,
``INSERT INTO "table" VALUE {'k': value, ...}``,
``UPDATE "table" SET path = value, ... | REMOVE path, ... WHERE condition [RETURNING ...]``,
``DELETE FROM "table" WHERE condition [RETURNING ALL OLD *]`` (DynamoDB Developer Guide,
"PartiQL - a SQL-compatible query language for Amazon DynamoDB"). Values are string (``'x'``),
number, boolean and NULL literals, ``?`` parameters, documents ``{'k': v}``, lists ``[v]`` and
sets ``<<v>>``; conditions are comparisons, BETWEEN, IN, IS [NOT] MISSING/NULL, ``begins_with``,
``contains``, ``attribute_type``, ``size()``, AND, OR, NOT. :mod:`labkit.endpoint.partiql.translate`
runs the tree as the equivalent DynamoDB requests. A statement DynamoDB cannot read is
"Statement wasn't well formed, can't be processed: ...".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ClientFault

_TOKEN = re.compile(
    r"""\s*(?:(?P<quoted>"(?:[^"]|"")*")|(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"""
    r"""|(?P<op><<|>>|<>|!=|<=|>=|[=<>(){}\[\],.:*?+-])|(?P<word>[A-Za-z_][A-Za-z0-9_]*))"""
)
FUNCTIONS = ("begins_with", "contains", "attribute_type", "size")
COMPARATORS = ("=", "<>", "!=", "<", "<=", ">", ">=")
RETURNING = ("ALL OLD", "MODIFIED OLD", "ALL NEW", "MODIFIED NEW")


def malformed(detail: str) -> ClientFault:
    return ClientFault("ValidationException", f"Statement wasn't well formed, can't be processed: {detail}")


# --- the tree ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """A ``?`` parameter (its position among the statement's parameters)."""

    index: int


@dataclass(frozen=True)
class Literal:
    """A literal: the DynamoDB attribute value it stands for (parameters inside stay :class:`Param`)."""

    value: Any


@dataclass(frozen=True)
class Ref:
    """A document path: names and list indexes."""

    parts: tuple[str | int, ...]


@dataclass(frozen=True)
class Func:
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Cond:
    """``op`` is a comparator, BETWEEN, IN, MISSING, NOT MISSING, NULL, NOT NULL, a function, AND, OR or NOT."""

    op: str
    args: tuple[Any, ...]


@dataclass
class Statement:
    kind: str  # SELECT, INSERT, UPDATE, DELETE; EXISTS (a SELECT inside EXISTS(...): transactions only)
    table: str
    index: str | None = None
    projection: tuple[Ref, ...] = ()  # SELECT (empty: *)
    where: Cond | None = None
    item: Any = None  # INSERT: a Literal document
    sets: list[tuple[Ref, Any]] = field(default_factory=list)  # UPDATE SET path = value
    removes: list[Ref] = field(default_factory=list)  # UPDATE REMOVE path
    returning: str | None = None
    parameters: int = 0


# --- parsing -------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos, text = 0, text.rstrip().rstrip(";")
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                if text[pos:].strip():
                    raise malformed(f"Unexpected character: {text[pos:].strip()[0]}")
                break
            kind = match.lastgroup or "op"
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0
        self.params = 0

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else ("end", "")

    def word(self, ahead: int = 0) -> str:
        kind, text = self.peek(ahead)
        return text.upper() if kind == "word" else ""

    def take(self, expected: str | None = None) -> tuple[str, str]:
        kind, text = self.peek()
        if kind == "end":
            raise malformed("Unexpected end of statement" if expected is None else f"Expected {expected}")
        if expected is not None and text.upper() != expected:
            raise malformed(f"Expected {expected}")
        self.i += 1
        return kind, text

    def name(self) -> str:
        kind, text = self.take()
        if kind == "quoted":
            return text[1:-1].replace('""', '"')
        if kind == "word":
            return text
        raise malformed(f"Unexpected token: {text}")

    def path(self) -> Ref:
        parts: list[str | int] = [self.name()]
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                parts.append(self.name())
            else:
                kind, text = self.take()
                if kind == "number" and text.isdigit():
                    parts.append(int(text))
                elif kind == "string":
                    parts.append(text[1:-1].replace("''", "'"))
                else:
                    raise malformed(f"Unexpected token: {text}")
                self.take("]")
        return Ref(tuple(parts))

    def value(self) -> Any:
        kind, text = self.peek()
        if text == "?":
            self.take()
            self.params += 1
            return Param(self.params - 1)
        if kind == "string":
            self.take()
            return Literal({"S": text[1:-1].replace("''", "'")})
        if kind == "number":
            self.take()
            return Literal({"N": text})
        if kind == "word" and text.upper() in ("TRUE", "FALSE"):
            self.take()
            return Literal({"BOOL": text.upper() == "TRUE"})
        if kind == "word" and text.upper() == "NULL":
            self.take()
            return Literal({"NULL": True})
        if text in ("{", "[", "<<"):
            return self.collection()
        raise malformed(f"Unexpected token: {text or 'end of statement'}")

    def collection(self) -> Literal:
        opener = self.take()[1]
        closer = {"{": "}", "[": "]", "<<": ">>"}[opener]
        members: list[Any] = []
        while self.peek()[1] != closer:
            if members:
                self.take(",")
            if opener == "{":
                kind, text = self.take()
                if kind != "string":
                    raise malformed(f"Unexpected token: {text}")
                self.take(":")
                members.append((text[1:-1].replace("''", "'"), self.value()))
            else:
                members.append(self.value())
        self.take(closer)
        if opener == "{":
            return Literal({"M": dict(members)})
        if opener == "[":
            return Literal({"L": members})
        return Literal({"<<": members})  # a set: its type is known once parameters are bound

    def operand(self) -> Any:
        kind, text = self.peek()
        if kind == "word" and text.lower() == "size" and self.peek(1)[1] == "(":
            self.take()
            self.take("(")
            inner = self.path()
            self.take(")")
            return Func("size", (inner,))
        if kind in ("word", "quoted") and text.upper() not in ("TRUE", "FALSE", "NULL"):
            return self.path()
        return self.value()

    # conditions -----------------------------------------------------------------------------
    def condition(self) -> Cond:
        return self.joined("OR", self.conjunction)

    def conjunction(self) -> Cond:
        return self.joined("AND", self.negation)

    def joined(self, word: str, operand: Callable[[], Cond]) -> Cond:
        """``operand (word operand)*``, left to right."""
        node = operand()
        while self.word() == word:
            self.take()
            node = Cond(word, (node, operand()))
        return node

    def negation(self) -> Cond:
        if self.word() == "NOT":
            self.take()
            return Cond("NOT", (self.negation(),))
        if self.peek()[1] == "(":
            self.take()
            node = self.condition()
            self.take(")")
            return node
        kind, text = self.peek()
        if kind == "word" and text.lower() in FUNCTIONS[:3] and self.peek(1)[1] == "(":
            self.take()
            self.take("(")
            args = [self.operand()]
            while self.peek()[1] == ",":
                self.take()
                args.append(self.operand())
            self.take(")")
            return Cond(text.lower(), tuple(args))
        return self.predicate()

    def predicate(self) -> Cond:
        left = self.operand()
        kind, text = self.peek()
        if text in COMPARATORS:
            self.take()
            return Cond("<>" if text == "!=" else text, (left, self.operand()))
        word = self.word()
        if word == "BETWEEN":
            self.take()
            low = self.operand()
            self.take("AND")
            return Cond("BETWEEN", (left, low, self.operand()))
        if word == "IN":
            self.take()
            opener = self.take()[1]
            if opener not in ("[", "("):
                raise malformed(f"Unexpected token: {opener}")
            options = [self.operand()]
            while self.peek()[1] == ",":
                self.take()
                options.append(self.operand())
            self.take("]" if opener == "[" else ")")
            return Cond("IN", (left, *options))
        if word == "IS":
            self.take()
            negated = self.word() == "NOT"
            if negated:
                self.take()
            what = self.take()[1].upper()
            if what not in ("MISSING", "NULL"):
                raise malformed(f"Unexpected token: {what}")
            return Cond(("NOT " if negated else "") + what, (left,))
        raise malformed(f"Unexpected token: {text or 'end of statement'}")

    # statements -----------------------------------------------------------------------------
    def target(self) -> tuple[str, str | None]:
        table = self.name()
        index = None
        if self.peek()[1] == ".":
            self.take()
            index = self.name()
            if self.peek()[1] == ".":
                raise ClientFault("ValidationException", "A path may contain at most 2 components in the FROM clause")
        if table == "" or index == "":
            raise ClientFault("ValidationException", "Path component cannot be an empty string")
        return table, index

    def returning(self) -> str | None:
        if self.word() != "RETURNING":
            return None
        self.take()
        which = f"{self.take()[1].upper()} {self.take()[1].upper()}"
        self.take("*")
        if which not in RETURNING:
            raise malformed(f"Unexpected token: {which}")
        return which

    def statement(self) -> Statement:
        verb = self.word()
        if verb == "SELECT":
            out = self.select()
        elif verb == "EXISTS" and self.peek(1)[1] == "(":
            self.take()
            self.take("(")
            if self.word() != "SELECT":
                raise malformed("Expected SELECT")
            inner = self.select()
            self.take(")")
            out = Statement("EXISTS", inner.table, inner.index, where=inner.where)
        elif verb == "INSERT":
            self.take()
            self.take("INTO")
            table, _ = self.target()
            self.take("VALUE")
            if self.peek()[1] != "{":
                raise malformed("Expected a document after VALUE")
            out = Statement("INSERT", table, item=self.collection())
        elif verb == "UPDATE":
            self.take()
            table, _ = self.target()
            out = Statement("UPDATE", table)
            while self.word() in ("SET", "REMOVE"):
                clause = self.take()[1].upper()
                self.update_action(clause, out)
                while self.peek()[1] == ",":
                    self.take()
                    self.update_action(clause, out)
            if not out.sets and not out.removes:
                raise malformed("Expected SET or REMOVE")
            out.where = self.where()
            out.returning = self.returning()
        elif verb == "DELETE":
            self.take()
            self.take("FROM")
            table, _ = self.target()
            out = Statement("DELETE", table, where=self.where())
            out.returning = self.returning()
        else:
            raise malformed("Expected data manipulation")
        if self.peek()[0] != "end":
            raise malformed(f"Unexpected token: {self.peek()[1]}")
        out.parameters = self.params
        return out

    def select(self) -> Statement:
        self.take("SELECT")
        projection: list[Ref] = []
        if self.peek()[1] == "*":
            self.take()
        else:
            projection.append(self.path())
            while self.peek()[1] == ",":
                self.take()
                projection.append(self.path())
        self.take("FROM")
        table, index = self.target()
        return Statement("SELECT", table, index, projection=tuple(projection), where=self.where())

    def update_action(self, clause: str, out: Statement) -> None:
        """One ``path = value`` of a SET, or one path of a REMOVE."""
        path = self.path()
        if clause == "SET":
            self.take("=")
            out.sets.append((path, self.set_value()))
        else:
            out.removes.append(path)

    def where(self) -> Cond | None:
        if self.word() != "WHERE":
            return None
        self.take()
        return self.condition()

    def set_value(self) -> Any:
        """A SET value: an operand, ``operand + operand``, ``operand - operand`` or a function call."""
        kind, text = self.peek()
        if kind == "word" and self.peek(1)[1] == "(" and text.lower() in ("list_append", "set_add", "set_delete"):
            self.take()
            self.take("(")
            first = self.operand()
            self.take(",")
            second = self.operand()
            self.take(")")
            return Func(text.lower(), (first, second))
        left = self.operand()
        if self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            return Func(op, (left, self.operand()))
        return left


def parse(text: str) -> Statement:
    """Parse one PartiQL statement; ClientFault (ValidationException) if DynamoDB could not read it."""
    return _Parser(text).statement()


__all__ = ["Cond", "Func", "Literal", "Param", "Ref", "Statement", "malformed", "parse"]
