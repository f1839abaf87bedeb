"""Random read-modify-write programs for the anomalies' differential (tests/races/test_anomalies_differential.py).

A *program* is 2-3 actors of 1-2 steps each; a step adds ``delta`` (1-3) to the ``n`` of one of 1-2 items
(absent or holding 0-2 at first) of a table keyed ``pk``/``sk``, in one of the styles teams write:

* ``put`` — GetItem, then PutItem the item with ``n`` = what it read + delta (no condition): loses updates;
* ``set`` — GetItem, then UpdateItem ``SET n = :v`` with what it read + delta (no condition): loses updates;
* ``create`` — GetItem; if absent PutItem ``n`` = delta (no condition), else ``ADD n :d``: a check-then-write;
* ``guarded`` — GetItem, then a write guarded by what it read (``attribute_not_exists(pk)`` for a create,
  ``n = :old`` for an update), read again and retried on ConditionalCheckFailed;
* ``add`` — UpdateItem ``ADD n :d`` (no read);
* ``incr`` — UpdateItem ``SET n = if_not_exists(n, :zero) + :d`` (no read).

Every step adds: the steps commute, so every serial order of the actors ends in the same state (each
item's initial ``n`` plus its steps' deltas), and a run that ends elsewhere lost a delta — a lost update
or a check-then-write duplicate, which the race lab must name from the history.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError
from hypothesis import strategies as st

from labkit.races.orders import count_orders
from labkit.shared.backend import Connection
from tests.helpers import reset_items

STYLES = ("put", "set", "create", "guarded", "add", "incr")
#: Styles that read first: two calls (a guarded step more when it retries).
READS = ("put", "set", "create", "guarded")
#: Enough attempts for a guarded step: each refusal is another actor's applied write (at most 2 x 2 of them).
ATTEMPTS = 6


@dataclass(frozen=True)
class Step:
    style: str
    item: int
    delta: int


@dataclass(frozen=True)
class Program:
    #: each item's initial ``n`` (None: absent)
    initial: tuple[int | None, ...]
    actors: tuple[tuple[Step, ...], ...]

    @property
    def names(self) -> list[str]:
        return ["ABC"[i] for i in range(len(self.actors))]

    def calls(self) -> dict[str, int]:
        """Each actor's calls when no guarded write is refused."""
        return {
            name: sum(2 if s.style in READS else 1 for s in steps)
            for name, steps in zip(self.names, self.actors, strict=True)
        }

    def orders(self) -> int:
        return count_orders(self.calls())


#: Styles whose resend by botocore (a lost answer) the anomalies cover: all but ``guarded``, whose loop
#: re-reads after its own resend is refused and applies again — a new write from a new read (decision 160).
RESENT_STYLES = ("put", "set", "create", "add", "incr")


@st.composite
def rmw_programs(draw: st.DrawFn, max_orders: int, styles: Sequence[str] = STYLES) -> Program:
    """A program whose orders (with no refusals) are at most ``max_orders``, its steps in ``styles``."""
    items = draw(st.integers(1, 2))
    initial = tuple(draw(st.lists(st.none() | st.integers(0, 2), min_size=items, max_size=items)))
    step = st.builds(Step, st.sampled_from(tuple(styles)), st.integers(0, items - 1), st.integers(1, 3))
    actors = [draw(st.lists(step, min_size=1, max_size=2).map(tuple)) for _ in range(draw(st.integers(2, 3)))]
    program = Program(initial, tuple(actors))
    while program.orders() > max_orders:
        longest = max(range(len(actors)), key=lambda i: program.calls()[program.names[i]])
        if len(actors[longest]) <= 1:
            actors.pop()
        else:
            actors[longest] = actors[longest][:-1]
        program = Program(initial, tuple(actors))
    return program


class Lab:
    """The table (``pk``/``sk``) the programs run on, and the client every actor uses: one attempt per
    call, or (``retrying``) botocore's standard retries, which resend a lost answer as a service's client does."""

    def __init__(self, conn: Connection, retrying: bool = False) -> None:
        self.conn = conn
        self.table = f"labkit-rmw-{uuid.uuid4().hex[:8]}"
        conn.client.create_table(
            TableName=self.table,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        self.client = conn.new_client(retries={"total_max_attempts": 3 if retrying else 1, "mode": "standard"})

    def drop(self) -> None:
        self.conn.client.delete_table(TableName=self.table)

    @staticmethod
    def key(i: int) -> dict[str, Any]:
        return {"pk": {"S": f"ACCT#{i}"}, "sk": {"S": "BALANCE"}}

    def setup(self, program: Program) -> Callable[[], None]:
        def reset() -> None:
            initial = (*program.initial, None, None)[:2]
            pairs = [
                (self.key(i), None if n is None else {**self.key(i), "n": {"N": str(n)}}) for i, n in enumerate(initial)
            ]
            reset_items(self.conn.client, {self.table: pairs})

        return reset

    def state(self) -> tuple[tuple[str, str], ...]:
        """Every item's ``n`` (the final state runs are compared by)."""
        items = self.conn.client.scan(TableName=self.table, ConsistentRead=True)["Items"]
        return tuple(sorted((i["pk"]["S"], i.get("n", {}).get("N", "-")) for i in items))

    # ------------------------------------------------------------ the steps

    def _read(self, key: dict[str, Any]) -> int | None:
        item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        return None if item is None else int(item["n"]["N"])

    def _add(self, key: dict[str, Any], delta: int) -> None:
        self.client.update_item(
            TableName=self.table,
            Key=key,
            UpdateExpression="ADD n :d",
            ExpressionAttributeValues={":d": {"N": str(delta)}},
        )

    def step(self, s: Step) -> None:
        key, table, client = self.key(s.item), self.table, self.client
        if s.style == "add":
            self._add(key, s.delta)
        elif s.style == "incr":
            client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET n = if_not_exists(n, :zero) + :d",
                ExpressionAttributeValues={":zero": {"N": "0"}, ":d": {"N": str(s.delta)}},
            )
        elif s.style == "put":
            n = self._read(key) or 0
            client.put_item(TableName=table, Item={**key, "n": {"N": str(n + s.delta)}})
        elif s.style == "set":
            n = self._read(key) or 0
            client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET n = :v",
                ExpressionAttributeValues={":v": {"N": str(n + s.delta)}},
            )
        elif s.style == "create":
            if self._read(key) is None:
                client.put_item(TableName=table, Item={**key, "n": {"N": str(s.delta)}})
            else:
                self._add(key, s.delta)
        elif s.style == "guarded":
            self._guarded(key, s.delta)
        else:  # pragma: no cover
            raise AssertionError(s.style)

    def _guarded(self, key: dict[str, Any], delta: int) -> None:
        for _ in range(ATTEMPTS):
            n = self._read(key)
            try:
                if n is None:
                    self.client.put_item(
                        TableName=self.table,
                        Item={**key, "n": {"N": str(delta)}},
                        ConditionExpression="attribute_not_exists(pk)",
                    )
                else:
                    self.client.update_item(
                        TableName=self.table,
                        Key=key,
                        UpdateExpression="SET n = :v",
                        ConditionExpression="n = :old",
                        ExpressionAttributeValues={":v": {"N": str(n + delta)}, ":old": {"N": str(n)}},
                    )
                return
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
        raise AssertionError(f"a guarded step was refused {ATTEMPTS} times")

    def actors(self, program: Program) -> dict[str, Callable[[], None]]:
        def make(steps: Sequence[Step]) -> Callable[[], None]:
            def actor() -> None:
                for s in steps:
                    self.step(s)

            return actor

        return {name: make(steps) for name, steps in zip(program.names, program.actors, strict=True)}

    def serial_states(self, program: Program) -> set[tuple[tuple[str, str], ...]]:
        """The final state of every serial order of the actors (run directly, ungated)."""
        states = set()
        actors = self.actors(program)
        for order in itertools.permutations(program.names):
            self.setup(program)()
            for name in order:
                actors[name]()
            states.add(self.state())
        return states
