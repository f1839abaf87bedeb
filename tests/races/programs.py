"""Random race programs for the soundness property test (tests/races/test_soundness.py).

A *program* is 2-3 actors of 2-4 DynamoDB calls each, on 1-3 items of one table; the table is
hash-only or hash+range, its key attributes named as teams name them (``id``, ``user_id``,
``pk``/``sk``, a numeric ``acct``/``ts``), and every item carries attributes besides its key. The
calls are the ones the issue lists — GetItem, a PutItem computed from what the actor read,
UpdateItem SET and ADD, DeleteItem, a conditional PutItem, a TransactWriteItems (an Update and a
ConditionCheck) — and the others that name items: Query on a partition, Scan, BatchGetItem,
BatchWriteItem, PartiQL with the full key. A third of the reads (GetItem, Query, Scan,
BatchGetItem) are DynamoDB's default, eventually consistent, so a ``stale-read`` has somewhere to
land. Every call's error is caught and recorded, so an actor makes the same number of calls in
every order (the comparison is fair to any exploration).

A program's *final state* is every item of the table and what every actor's calls answered.

:data:`FAULT_KINDS` is the one list of faults the generated programs draw from: add a kind
there and every fault property runs it (the weak answers of issue 26 are in it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from hypothesis import strategies as st

from labkit.backend import Connection
from labkit.races import Interleaving
from labkit.races.orders import count_orders

#: The faults a generated program may be explored with (one place: add new kinds here).
FAULT_KINDS: tuple[str, ...] = (
    "lose-response",
    "transaction-conflict",
    "stale-read",
    "unprocessed-items",
    "short-page",
)


@dataclass(frozen=True)
class Schema:
    """A table's key: the hash attribute (and its type), the range attribute or None."""

    hash: str
    hash_type: str = "S"
    range: str | None = None
    range_type: str = "S"


#: Key schemas as teams write them; PK/SK last (the only one the old call_key got right).
SCHEMAS: tuple[Schema, ...] = (
    Schema("id"),
    Schema("user_id"),
    Schema("pk", range="sk"),
    Schema("acct", "N", "ts", "N"),
    Schema("PK", range="SK"),
)

#: Call kinds, each ``(client, ctx, step) -> answer``; ``ctx`` is the program's world.
KINDS: tuple[str, ...] = (
    "get",
    "put_from_read",
    "set",
    "add",
    "delete",
    "cond_put",
    "transact",
    "query",
    "scan",
    "batch_get",
    "batch_write",
    "partiql_get",
    "partiql_set",
)


@dataclass(frozen=True)
class Step:
    kind: str
    item: int
    other: int
    value: int


@dataclass(frozen=True)
class Program:
    schema: int
    #: each item's initial ``n`` (None: absent)
    initial: tuple[int | None, ...]
    actors: tuple[tuple[Step, ...], ...]

    @property
    def names(self) -> list[str]:
        return ["ABC"[i] for i in range(len(self.actors))]

    def calls(self) -> dict[str, int]:
        return {name: len(steps) for name, steps in zip(self.names, self.actors, strict=True)}

    def orders(self) -> int:
        return count_orders(self.calls())


def _steps(items: int, least: int, most: int) -> st.SearchStrategy[tuple[Step, ...]]:
    step = st.builds(
        Step,
        st.sampled_from(KINDS),
        st.integers(0, items - 1),
        st.integers(0, items - 1),
        st.integers(1, 3),
    )
    return st.lists(step, min_size=least, max_size=most).map(tuple)


@st.composite
def programs(draw: st.DrawFn, max_orders: int, most_calls: int = 4) -> Program:
    """A program whose orders (the multinomial of its call counts) are at most ``max_orders``."""
    schema = draw(st.integers(0, len(SCHEMAS) - 1))
    items = draw(st.integers(1, 3))
    initial = tuple(draw(st.lists(st.none() | st.integers(0, 2), min_size=items, max_size=items)))
    n_actors = draw(st.integers(2, 3))
    actors = [draw(_steps(items, 2, most_calls)) for _ in range(n_actors)]
    while count_orders({str(i): len(a) for i, a in enumerate(actors)}) > max_orders:
        longest = max(range(n_actors), key=lambda i: len(actors[i]))
        if len(actors[longest]) <= 1:
            break
        actors[longest] = actors[longest][:-1]
    return Program(schema, initial, tuple(actors))


# ---------------------------------------------------------------- the world a program runs in


@dataclass(frozen=True)
class World:
    """The tables (one per schema) the programs run on, and the one client every actor uses.

    The client makes one attempt per call (a lost answer reaches the actor); one for all the
    programs' actors keeps each exploration from making clients of its own.
    """

    conn: Connection
    tables: tuple[str, ...]
    client: Any

    @classmethod
    def create(cls, conn: Connection) -> World:
        names = []
        for schema in SCHEMAS:
            name = f"labkit-sound-{schema.hash.lower()}-{uuid.uuid4().hex[:6]}"
            keys = [{"AttributeName": schema.hash, "KeyType": "HASH"}]
            attrs = [{"AttributeName": schema.hash, "AttributeType": schema.hash_type}]
            if schema.range is not None:
                keys.append({"AttributeName": schema.range, "KeyType": "RANGE"})
                attrs.append({"AttributeName": schema.range, "AttributeType": schema.range_type})
            conn.client.create_table(
                TableName=name,
                KeySchema=keys,  # type: ignore[arg-type]
                AttributeDefinitions=attrs,  # type: ignore[arg-type]
                BillingMode="PAY_PER_REQUEST",
            )
            names.append(name)
        return cls(conn, tuple(names), conn.new_client(retries={"total_max_attempts": 1, "mode": "standard"}))

    def drop(self) -> None:
        for name in self.tables:
            self.conn.client.delete_table(TableName=name)


class Ctx:
    """One program on its table: item keys, the calls, setup and the final state."""

    def __init__(self, world: World, program: Program) -> None:
        self.world = world
        self.program = program
        self.schema = SCHEMAS[program.schema]
        self.table = world.tables[program.schema]

    def _value(self, kind: str, raw: str) -> dict[str, str]:
        return {kind: raw}

    def key(self, i: int) -> dict[str, dict[str, str]]:
        s = self.schema
        if s.range is None:
            raw = str(100 + i) if s.hash_type == "N" else f"item-{i}"
            return {s.hash: self._value(s.hash_type, raw)}
        # two items share a partition, so a Query on it meets both
        part = str(i // 2) if s.hash_type == "N" else f"part-{i // 2}"
        sort = str(i) if s.range_type == "N" else f"s-{i}"
        return {s.hash: self._value(s.hash_type, part), s.range: self._value(s.range_type, sort)}

    def item(self, i: int, n: int, who: str) -> dict[str, Any]:
        return {**self.key(i), "n": {"N": str(n)}, "by": {"S": who}, "note": {"S": f"item {i}"}}

    def setup(self) -> None:
        client = self.world.conn.client
        for i, n in enumerate(self.program.initial):
            if n is None:
                client.delete_item(TableName=self.table, Key=self.key(i))
            else:
                client.put_item(TableName=self.table, Item=self.item(i, n, "setup"))

    def final_state(self, res: Interleaving) -> tuple[Any, ...]:
        client = self.world.conn.client
        items = client.scan(TableName=self.table, ConsistentRead=True)["Items"]
        rows = sorted(tuple(sorted((k, str(v)) for k, v in item.items())) for item in items)
        return (tuple(rows), tuple(sorted((k, str(v)) for k, v in res.results.items())))

    def _literal(self, av: Mapping[str, str]) -> str:
        ((kind, raw),) = av.items()
        return raw if kind == "N" else f"'{raw}'"

    def _where(self, i: int) -> str:
        return " AND ".join(f'"{name}" = {self._literal(av)}' for name, av in self.key(i).items())

    def call(self, client: Any, who: str, step: Step, seen: dict[int, int]) -> Any:
        t, key = self.table, self.key(step.item)
        kind = step.kind
        consistent = step.value != 1  # a third of the reads are DynamoDB's default: eventually consistent
        if kind == "get":
            item = client.get_item(TableName=t, Key=key, ConsistentRead=consistent).get("Item")
            seen[step.item] = int(item["n"]["N"]) if item else 0
            return seen[step.item] if item else None
        if kind == "put_from_read":
            client.put_item(TableName=t, Item=self.item(step.item, seen.get(step.item, 0) + 1, who))
            return "put"
        if kind == "set":
            client.update_item(
                TableName=t,
                Key=key,
                UpdateExpression="SET n = :v, #by = :who",
                ExpressionAttributeNames={"#by": "by"},
                ExpressionAttributeValues={":v": {"N": str(step.value)}, ":who": {"S": who}},
            )
            return "set"
        if kind == "add":
            out = client.update_item(
                TableName=t,
                Key=key,
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
                ReturnValues="UPDATED_NEW",
            )
            return int(out["Attributes"]["n"]["N"])
        if kind == "delete":
            client.delete_item(TableName=t, Key=key)
            return "deleted"
        if kind == "cond_put":
            client.put_item(
                TableName=t,
                Item=self.item(step.item, step.value, who),
                ConditionExpression="attribute_not_exists(#h)",
                ExpressionAttributeNames={"#h": self.schema.hash},
            )
            return "created"
        if kind == "transact":
            client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": t,
                            "Key": key,
                            "UpdateExpression": "SET n = :v",
                            "ExpressionAttributeValues": {":v": {"N": str(seen.get(step.item, 0) + step.value)}},
                        }
                    },
                    *(
                        [
                            {
                                "ConditionCheck": {
                                    "TableName": t,
                                    "Key": self.key(step.other),
                                    "ConditionExpression": "attribute_exists(n)",
                                }
                            }
                        ]
                        if step.other != step.item
                        else []
                    ),
                ]
            )
            return "committed"
        if kind == "query":
            s = self.schema
            part = self.key(step.item)[s.hash]
            out = client.query(
                TableName=t,
                KeyConditionExpression="#h = :p",
                ExpressionAttributeNames={"#h": s.hash},
                ExpressionAttributeValues={":p": part},
                ConsistentRead=consistent,
            )
            return tuple(sorted(str(i["n"]) for i in out["Items"]))
        if kind == "scan":
            out = client.scan(TableName=t, ConsistentRead=consistent)
            return tuple(sorted(str(i["n"]) for i in out["Items"]))
        if kind == "batch_get":
            keys = [self.key(step.item)] + ([self.key(step.other)] if step.other != step.item else [])
            out = client.batch_get_item(RequestItems={t: {"Keys": keys, "ConsistentRead": consistent}})
            return tuple(sorted(str(i["n"]) for i in out["Responses"].get(t, [])))  # all unprocessed: none
        if kind == "batch_write":
            writes: list[dict[str, Any]] = [{"PutRequest": {"Item": self.item(step.item, step.value, who)}}]
            if step.other != step.item:
                writes.append({"DeleteRequest": {"Key": self.key(step.other)}})
            client.batch_write_item(RequestItems={t: writes})
            return "batched"
        if kind == "partiql_get":
            out = client.execute_statement(Statement=f'SELECT * FROM "{t}" WHERE {self._where(step.item)}')
            return tuple(sorted(str(i["n"]) for i in out["Items"]))
        if kind == "partiql_set":
            client.execute_statement(Statement=f'UPDATE "{t}" SET n = {step.value} WHERE {self._where(step.item)}')
            return "updated"
        raise AssertionError(f"unknown kind {kind}")

    def actors(self) -> dict[str, Callable[[], tuple[Any, ...]]]:
        client = self.world.client

        def make(who: str, steps: Sequence[Step]) -> Callable[[], tuple[Any, ...]]:
            def actor() -> tuple[Any, ...]:
                seen: dict[int, int] = {}
                answers: list[Any] = []
                for step in steps:
                    try:
                        answers.append(self.call(client, who, step, seen))
                    except ClientError as exc:
                        answers.append(exc.response["Error"]["Code"])
                    except BotoCoreError as exc:  # a lost answer (a fault): the call may have landed
                        answers.append(type(exc).__name__)
                return tuple(answers)

            return actor

        return {who: make(who, steps) for who, steps in zip(self.program.names, self.program.actors, strict=True)}
