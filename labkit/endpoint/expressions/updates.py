"""Syntax of DynamoDB's UpdateExpression, checked before moto applies it.

``SET a = :v, b = b + :one REMOVE c ADD n :one DELETE s :gone``: each clause at most once, SET
values built from paths, placeholders, ``if_not_exists(path, value)``, ``list_append(a, b)`` and
one ``+`` or ``-``. A syntax error, a reserved word used as a name, an unknown function or a
repeated clause is refused in DynamoDB's words; moto then executes the (valid) expression.
"""

from __future__ import annotations

from .syntax import Parsed, Parser, Path

_CLAUSES = ("SET", "REMOVE", "ADD", "DELETE")
_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}


class _UpdateParser(Parser):
    def __init__(self, text: str) -> None:
        super().__init__("UpdateExpression", text)
        self.targets: list[Path] = []

    def expression(self) -> None:
        seen: set[str] = set()
        if self.peek().upper() not in _CLAUSES:
            raise self.syntax()
        while self.peek().upper() in _CLAUSES:
            clause = self.take().upper()
            if clause in seen:
                raise self.fail(f'The "{clause}" section can only be used once in an update expression;')
            seen.add(clause)
            self.action(clause)
            while self.peek() == ",":
                self.take()
                self.action(clause)
        self.done()

    def action(self, clause: str) -> None:
        target = self.path()
        self.targets.append(target)
        if clause == "SET":
            self.take("=")
            self.value()
            if self.peek() in ("+", "-"):
                self.take()
                self.value()
        elif clause in ("ADD", "DELETE"):
            self.value()

    def value(self) -> None:
        token = self.peek()
        if token.startswith(":"):
            self.out.values.add(self.take())
            return
        if self.peek(1) == "(" and self.is_name(token) and not token.startswith("#"):
            arity = _FUNCTIONS.get(token)
            if arity is None:
                raise self.fail(f"Invalid function name; function: {token}")
            self.take()
            self.take("(")
            if token == "if_not_exists":
                self.path()
            else:
                self.value()
            self.take(",")
            self.value()
            self.take(")")
            return
        self.path()


def update(text: str) -> tuple[Parsed, list[Path]]:
    """Parse an UpdateExpression: its placeholders, and the paths it writes (SET/REMOVE/ADD/DELETE)."""
    parser = _UpdateParser(text)
    if not parser.tokens:
        raise parser.fail("The expression can not be empty;")
    parser.expression()
    return parser.out, parser.targets


__all__ = ["update"]
