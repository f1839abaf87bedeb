"""What a solution did, in the checker's terms: its calls, its outcomes, and words for them.

A :class:`RecordedCall` is one DynamoDB call a solution made (recorded with its parameters at
``before-parameter-build``); an :class:`Outcome` is one run of the solution; a :class:`Broke` is a
forced order that broke an invariant. :class:`Stop` ends a check with one finding.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from ...races import Interleaving
from ...shared.catalogue import DATA_PLANE, ITEM_WRITES, WRITES, Op
from .verdict import Finding

#: Who the actors are, in the checker's sentences.
PEOPLE: Mapping[str, str] = {"A": "Ada", "B": "Bob", "C": "Cy"}
#: The operations a solution may call: DynamoDB's item reads and writes, and DescribeTable.
ALLOWED_OPERATIONS = DATA_PLANE | {Op.DESCRIBE_TABLE}

Item = dict[str, Any]
_serializer = TypeSerializer()


class Stop(Exception):
    """Ends a check with one finding (internal)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


@dataclass(frozen=True)
class RecordedCall:
    """One DynamoDB call the solution made: who, which operation, the parameters it passed."""

    actor: str
    operation: str
    params: Mapping[str, Any]

    @property
    def is_write(self) -> bool:
        return self.operation in WRITES

    def actions(self) -> list[tuple[str, Mapping[str, Any]]]:
        """(action, body) of each write: ("Put", {...}) for a PutItem or each transaction action."""
        op, p = self.operation, self.params
        if op == Op.TRANSACT_WRITE_ITEMS:
            return [next(iter(a.items())) for a in p.get("TransactItems", []) if isinstance(a, Mapping)]
        if op in ITEM_WRITES:
            return [(op.removesuffix("Item"), p)]
        return []

    @property
    def conditional(self) -> bool:
        """Every write action of this call carries a ConditionExpression."""
        acts = self.actions()
        return bool(acts) and all("ConditionExpression" in body for _, body in acts)


@dataclass
class Outcome:
    """One run of the solution: what it returned or raised, and the calls it made."""

    actor: str
    args: tuple[Any, ...]
    value: Any = None
    exc: Exception | None = None
    calls: list[RecordedCall] = field(default_factory=list)
    turns: int = 0

    @property
    def ok(self) -> bool:
        return self.exc is None


def person(actor: str) -> str:
    if actor in PEOPLE:
        return PEOPLE[actor]
    return f"worker {actor.removeprefix('w')}" if actor.startswith("w") else actor


def last_line(exc: BaseException) -> str:
    """The last line of the exception's traceback (``ZeroDivisionError: division by zero``)."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def typed(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain Python values -> DynamoDB's typed JSON."""
    return {k: _serializer.serialize(v) for k, v in item.items()}


@dataclass
class Broke:
    """A forced order that broke an invariant: the run, the outcomes, the table afterwards."""

    res: Interleaving
    outcomes: dict[str, Outcome]
    items: list[Item]
    problem: str


Judge = Callable[[dict[str, Outcome], list[Item]], str | None]
Explain = Callable[[Broke], Finding]


def call_text(args: tuple[Any, ...]) -> str:
    return "solution(client, table_name, " + ", ".join(repr(a) for a in args) + ")"


def uses(calls: Sequence[RecordedCall], operation: str, **has: Any) -> bool:
    """Whether any call is ``operation`` (and has the given parameters, if any)."""
    return any(c.operation == operation and all(c.params.get(k) == v for k, v in has.items()) for c in calls)


__all__ = [
    "PEOPLE",
    "ALLOWED_OPERATIONS",
    "Broke",
    "RecordedCall",
    "Explain",
    "Item",
    "Judge",
    "Outcome",
    "Stop",
    "call_text",
    "last_line",
    "person",
    "typed",
    "uses",
]
