"""Random race programs for the soundness property test (tests/races/test_soundness.py).

A *program* is 2-3 actors of 2-4 DynamoDB calls each, on 1-3 items of a main table and 1-2 items
of a second one. The main table is keyed as teams key it (``id``, ``user_id``, ``pk``/``sk``, a
numeric ``acct``/``ts``, a binary ``blob``, ``PK``/``SK``), carries a GSI (``by_grp``) and
attributes besides its keys; the second table (``sku``) stands for "another table in the same
transaction or batch". What the calls cover:

* every spelling DynamoDB folds to one number (``0``/``-0``/``0E0``, ``1``/``1.0``/``1E0``/``01``):
  each call spells its keys its own way (``Step.spell``), so two calls may name one item in two
  spellings — and the binary keys as ``bytes`` or as text (botocore sends a text B value as its
  UTF-8 bytes);
* GetItem, a PutItem computed from what the actor read, UpdateItem SET and ADD, DeleteItem, a
  conditional PutItem, TransactWriteItems (an Update and a ConditionCheck on either table; or a Put
  of two main-table items, moving them between the GSI's groups: what a torn read splits),
  Query on a partition and on the GSI, Scan of the table and of the GSI (each GSI entry lags on its
  own: the multi-write stale views), BatchGetItem and BatchWriteItem over both tables,
  PartiQL SELECT/UPDATE with the full key;
* reads whose answer decides the next operation (``branch``: a Scan when the item it read holds
  ``n > 0``, else a GetItem of another item; ``upsert``: an update if the read found the item,
  else a conditional put);
* a third of the reads eventually consistent, so a ``stale-read`` has somewhere to land.

Every call's error is caught and recorded, so the comparison is fair to any exploration.

A program's *outcome* is every item of both tables and what every actor's calls answered; the
soundness test compares outcomes per fault that fired (:func:`fired`), so a strategy cannot make
up for a missed outcome of one fault with the outcome of another.

:data:`FAULT_KINDS` is every kind explore places; a program draws the kinds it is explored with.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from hypothesis import strategies as st

from labkit.races import Interleaving
from labkit.races.orders import count_orders
from labkit.races.scenarios import EXPLORE_FAULTS
from labkit.shared.backend import Connection
from tests.helpers import reset_items

#: Every fault kind explore places (one place: a new kind joins every fault property).
FAULT_KINDS: tuple[str, ...] = EXPLORE_FAULTS


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
    Schema("blob", "B"),
    Schema("PK", range="SK"),
)
#: The second table every program may touch (hash-only, keyed ``sku``).
SECOND = Schema("sku")
#: The most items a program names in each table (a step's ``item`` and ``other`` are below it).
ITEMS = 3
#: The main tables' global secondary index: hash ``grp`` (``g0``/``g1``), every attribute projected.
GSI = "by_grp"

#: Call kinds, each ``(client, ctx, step) -> answer``.
KINDS: tuple[str, ...] = (
    "get",
    "put_from_read",
    "set",
    "add",
    "delete",
    "cond_put",
    "transact",
    "transact_pair",
    "query",
    "query_gsi",
    "scan",
    "scan_gsi",
    "batch_get",
    "batch_write",
    "partiql_get",
    "partiql_set",
    "branch",
    "upsert",
)
#: How a number is spelled (each the same number to DynamoDB: "Supported data types", Number).
SPELLINGS: Mapping[int, tuple[str, ...]] = {
    0: ("0", "-0", "0E0", "-0.0"),
    1: ("1", "1.0", "1E0", "01"),
    2: ("2", "2.00", "0.2E1", "002"),
}


@dataclass(frozen=True)
class Step:
    kind: str
    item: int
    other: int
    value: int
    #: which table the call's first item is in (0: the main table, 1: the second one)
    table: int = 0
    #: how its keys are spelled (numbers: :data:`SPELLINGS`; binaries: even bytes, odd text)
    spell: int = 0


@dataclass(frozen=True)
class Program:
    schema: int
    #: each main-table item's initial ``n`` (None: absent)
    initial: tuple[int | None, ...]
    actors: tuple[tuple[Step, ...], ...]
    #: each second-table item's initial ``n`` (None: absent)
    second: tuple[int | None, ...] = ()
    #: the fault kinds it is explored with (the fault properties)
    faults: tuple[str, ...] = field(default=(), compare=False)

    @property
    def names(self) -> list[str]:
        return ["ABC"[i] for i in range(len(self.actors))]

    def calls(self) -> dict[str, int]:
        """The calls each actor makes (a ``branch`` or ``upsert`` is two: its read, then what it decides)."""
        return {
            name: sum(2 if s.kind in ("branch", "upsert") else 1 for s in steps)
            for name, steps in zip(self.names, self.actors, strict=True)
        }

    def orders(self) -> int:
        return count_orders(self.calls())


def _steps(items: int, least: int, most: int) -> st.SearchStrategy[tuple[Step, ...]]:
    step = st.builds(
        Step,
        st.sampled_from(KINDS),
        st.integers(0, items - 1),
        st.integers(0, items - 1),
        st.integers(1, 3),
        st.integers(0, 1),
        st.integers(0, 3),
    )
    return st.lists(step, min_size=least, max_size=most).map(tuple)


@st.composite
def programs(draw: st.DrawFn, max_orders: int, most_calls: int = 4, faults: bool = False) -> Program:
    """A program whose orders (the multinomial of its call counts) are at most ``max_orders``."""
    schema = draw(st.integers(0, len(SCHEMAS) - 1))
    items = draw(st.integers(1, ITEMS))
    initial = tuple(draw(st.lists(st.none() | st.integers(0, 2), min_size=items, max_size=items)))
    second = tuple(draw(st.lists(st.none() | st.integers(0, 2), min_size=2, max_size=2)))
    n_actors = draw(st.integers(1 if faults else 2, 3))
    actors = [draw(_steps(items, 1 if faults else 2, most_calls)) for _ in range(n_actors)]
    program = Program(schema, initial, tuple(actors), second)
    while program.orders() > max_orders:
        calls = program.calls()
        longest = max(range(n_actors), key=lambda i: calls[program.names[i]])
        if len(actors[longest]) <= 1:
            break
        actors[longest] = actors[longest][:-1]
        program = Program(schema, initial, tuple(actors), second)
    kinds = tuple(draw(st.lists(st.sampled_from(FAULT_KINDS), min_size=1, max_size=3, unique=True))) if faults else ()
    return Program(schema, initial, tuple(actors), second, kinds)


# ---------------------------------------------------------------- the world a program runs in


@dataclass(frozen=True)
class World:
    """The tables (one per schema, and the second table) and the one client every actor uses.

    The client makes one attempt per call (a lost answer reaches the actor); one for all the
    programs' actors keeps each exploration from making clients of its own.
    """

    conn: Connection
    tables: tuple[str, ...]
    second: str
    client: Any

    @classmethod
    def create(cls, conn: Connection) -> World:
        names = []
        suffix = uuid.uuid4().hex[:6]
        for i, schema in enumerate(SCHEMAS):
            name = f"labkit-sound-{i}-{schema.hash.lower()}-{suffix}"
            keys = [{"AttributeName": schema.hash, "KeyType": "HASH"}]
            attrs = [
                {"AttributeName": schema.hash, "AttributeType": schema.hash_type},
                {"AttributeName": "grp", "AttributeType": "S"},
            ]
            if schema.range is not None:
                keys.append({"AttributeName": schema.range, "KeyType": "RANGE"})
                attrs.append({"AttributeName": schema.range, "AttributeType": schema.range_type})
            conn.client.create_table(
                TableName=name,
                KeySchema=keys,  # type: ignore[arg-type]
                AttributeDefinitions=attrs,  # type: ignore[arg-type]
                BillingMode="PAY_PER_REQUEST",
                GlobalSecondaryIndexes=[
                    {
                        "IndexName": GSI,
                        "KeySchema": [{"AttributeName": "grp", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                ],
            )
            names.append(name)
        second = f"labkit-sound-sku-{suffix}"
        conn.client.create_table(
            TableName=second,
            KeySchema=[{"AttributeName": SECOND.hash, "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": SECOND.hash, "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client = conn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})
        return cls(conn, tuple(names), second, client)

    def drop(self) -> None:
        for name in (*self.tables, self.second):
            self.conn.client.delete_table(TableName=name)


def fired(res: Interleaving) -> tuple[tuple[str, int, str], ...]:
    """The fault that fired in a run (actor, call number, kind with its view: ``stale-read (index misses A1)``),
    or () — what outcomes are compared per (a view the engine could not give, ``(none; ...)``, is its kind's)."""
    out = []
    for record in res.records:
        label = str(record.get("injected") or "")
        if label:
            out.append((str(record.get("actor")), int(record.get("seq") or 0) + 1, label.split(" (none")[0]))
    return tuple(sorted(out))


class Ctx:
    """One program on its tables: item keys, the calls, setup and the outcome."""

    def __init__(self, world: World, program: Program) -> None:
        self.world = world
        self.program = program
        self.schema = SCHEMAS[program.schema]
        self.table = world.tables[program.schema]

    # ------------------------------------------------------------ keys, spelled as the call spells them

    def _value(self, kind: str, n: int, spell: int, text: str) -> dict[str, Any]:
        if kind == "N":
            return {"N": SPELLINGS[n][spell % len(SPELLINGS[n])]}
        if kind == "B":
            raw = f"key{n}"  # valid base64 as text too: the race lab once decoded it, the engine never does
            return {"B": raw if spell % 2 else raw.encode("utf-8")}  # text: botocore sends its UTF-8 bytes
        return {"S": f"{text}{n}"}

    def key(self, i: int, spell: int = 0, table: int = 0) -> dict[str, dict[str, Any]]:
        if table == 1:
            return {SECOND.hash: {"S": f"sku-{i}"}}
        s = self.schema
        if s.range is None:
            return {s.hash: self._value(s.hash_type, i, spell, "item-")}
        # two items share a partition, so a Query on it meets both
        return {
            s.hash: self._value(s.hash_type, i // 2, spell, "part-"),
            s.range: self._value(s.range_type, i, spell, "s-"),
        }

    def _table(self, table: int) -> str:
        return self.world.second if table == 1 else self.table

    def item(self, i: int, n: int, who: str, spell: int = 0, table: int = 0) -> dict[str, Any]:
        extra = {} if table == 1 else {"grp": {"S": f"g{n % 2}"}}
        return {**self.key(i, spell, table), "n": {"N": str(n)}, "by": {"S": who}, "note": {"S": f"item {i}"}, **extra}

    # ------------------------------------------------------------ setup and outcome

    def setup(self) -> None:
        """Every item a step may name, reset: one BatchWriteItem for both tables (a run's setup is
        most of a small program's calls)."""
        tables = {}
        for table, given in ((0, self.program.initial), (1, self.program.second)):
            initial = (*given, *[None] * (ITEMS - len(given)))
            tables[self._table(table)] = [
                (self.key(i, table=table), None if n is None else self.item(i, n, "setup", table=table))
                for i, n in enumerate(initial)
            ]
        reset_items(self.world.conn.client, tables)

    def final_state(self, res: Interleaving) -> tuple[Any, ...]:
        # every item a step may name (keys 0..ITEMS-1 in each table), in one consistent BatchGetItem
        names = (self.table, self.world.second)
        got = self.world.conn.client.batch_get_item(
            RequestItems={
                name: {"Keys": [self.key(i, table=t) for i in range(ITEMS)], "ConsistentRead": True}
                for t, name in enumerate(names)
            }
        )
        assert not got["UnprocessedKeys"], f"the final read was not all answered: {got['UnprocessedKeys']}"
        tables = []
        for name in names:
            items = got["Responses"].get(name, [])
            tables.append(tuple(sorted(tuple(sorted((k, str(v)) for k, v in item.items())) for item in items)))
        return (tuple(tables), tuple(sorted((k, str(v)) for k, v in res.results.items())))

    # ------------------------------------------------------------ the calls

    def _literal(self, av: Mapping[str, Any]) -> str:
        ((kind, raw),) = av.items()
        return str(raw) if kind == "N" else f"'{raw}'"

    def _where(self, key: Mapping[str, Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """A PartiQL WHERE for the full key: literals for S and N, a ``?`` parameter for a binary."""
        parts, params = [], []
        for name, av in key.items():
            if "B" in av:
                parts.append(f'"{name}" = ?')
                params.append(dict(av))
            else:
                parts.append(f'"{name}" = {self._literal(av)}')
        return " AND ".join(parts), params

    def _n(self, items: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        return tuple(sorted(str(i["n"]) for i in items))

    def call(self, client: Any, who: str, step: Step, seen: dict[tuple[int, int], int], answers: list[Any]) -> None:
        kind = step.kind
        if kind == "branch":  # a read whose answer decides the next operation
            x = self._get(client, step, seen, consistent=True)
            answers.append(x)
            if x is not None and x > 0:
                answers.append(self._n(client.scan(TableName=self.table, ConsistentRead=step.value != 1)["Items"]))
            else:
                other = Step("get", step.other, step.item, step.value, 1 - step.table, step.spell)
                answers.append(self._get(client, other, seen, consistent=step.value != 1))
            return
        if kind == "upsert":  # an update if the read found the item, else a create
            found = self._get(client, step, seen, consistent=step.value != 1)
            answers.append(found)
            then = Step(
                "set" if found is not None else "cond_put", step.item, step.other, step.value, step.table, step.spell
            )
            answers.append(self._one(client, who, then, seen))
            return
        answers.append(self._one(client, who, step, seen))

    def _get(self, client: Any, step: Step, seen: dict[tuple[int, int], int], consistent: bool) -> int | None:
        key = self.key(step.item, step.spell, step.table)
        item = client.get_item(TableName=self._table(step.table), Key=key, ConsistentRead=consistent).get("Item")
        seen[(step.table, step.item)] = int(item["n"]["N"]) if item else 0
        return int(item["n"]["N"]) if item else None

    def _one(self, client: Any, who: str, step: Step, seen: dict[tuple[int, int], int]) -> Any:
        kind, tb = step.kind, step.table
        t, key = self._table(tb), self.key(step.item, step.spell, tb)
        consistent = step.value != 1  # a third of the reads are DynamoDB's default: eventually consistent
        if kind == "get":
            return self._get(client, step, seen, consistent)
        if kind == "put_from_read":
            item = self.item(step.item, seen.get((tb, step.item), 0) + 1, who, step.spell, tb)
            client.put_item(TableName=t, Item=item)
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
                Item=self.item(step.item, step.value, who, step.spell, tb),
                ConditionExpression="attribute_not_exists(n)",
            )
            return "created"
        if kind == "transact":  # an Update of this item, a ConditionCheck on an item of the other table
            check_table = 1 - tb
            client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": t,
                            "Key": key,
                            "UpdateExpression": "SET n = :v",
                            "ExpressionAttributeValues": {":v": {"N": str(seen.get((tb, step.item), 0) + step.value)}},
                        }
                    },
                    {
                        "ConditionCheck": {
                            "TableName": self._table(check_table),
                            "Key": self.key(step.other, step.spell + 1, check_table),
                            "ConditionExpression": "attribute_exists(n)",
                        }
                    },
                ]
            )
            return "committed"
        if kind == "transact_pair":  # two main-table items put together (n and grp from value): torn-read splits them
            second = (step.item + 1) % ITEMS
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": self.table, "Item": self.item(i, step.value + j, who, step.spell)}}
                    for j, i in enumerate((step.item, second))
                ]
            )
            return "committed"
        if kind == "scan_gsi":  # always eventually consistent
            return self._n(client.scan(TableName=self.table, IndexName=GSI)["Items"])
        if kind == "query":
            if tb == 1:  # the second table is hash-only: a Query names one item
                names, part = {"#h": SECOND.hash}, key[SECOND.hash]
            else:
                names, part = {"#h": self.schema.hash}, key[self.schema.hash]
            out = client.query(
                TableName=t,
                KeyConditionExpression="#h = :p",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":p": part},
                ConsistentRead=consistent,
            )
            return self._n(out["Items"])
        if kind == "query_gsi":  # always eventually consistent (a GSI has no strong reads)
            out = client.query(
                TableName=self.table,
                IndexName=GSI,
                KeyConditionExpression="grp = :g",
                ExpressionAttributeValues={":g": {"S": f"g{step.value % 2}"}},
            )
            return self._n(out["Items"])
        if kind == "scan":
            return self._n(client.scan(TableName=t, ConsistentRead=consistent)["Items"])
        if kind == "batch_get":  # this item, and an item of the other table
            other_t = 1 - tb
            out = client.batch_get_item(
                RequestItems={
                    t: {"Keys": [key], "ConsistentRead": consistent},
                    self._table(other_t): {"Keys": [self.key(step.other, step.spell + 1, other_t)]},
                }
            )
            responses = out["Responses"]
            return (self._n(responses.get(t, [])), self._n(responses.get(self._table(other_t), [])))
        if kind == "batch_write":  # a put here, a delete in the other table
            other_t = 1 - tb
            client.batch_write_item(
                RequestItems={
                    t: [{"PutRequest": {"Item": self.item(step.item, step.value, who, step.spell, tb)}}],
                    self._table(other_t): [{"DeleteRequest": {"Key": self.key(step.other, step.spell + 1, other_t)}}],
                }
            )
            return "batched"
        if kind == "partiql_get":
            where, params = self._where(key)
            out = client.execute_statement(
                Statement=f'SELECT * FROM "{t}" WHERE {where}', **({"Parameters": params} if params else {})
            )
            return self._n(out["Items"])
        if kind == "partiql_set":
            where, params = self._where(key)
            out = client.execute_statement(
                Statement=f'UPDATE "{t}" SET n = {step.value} WHERE {where}',
                **({"Parameters": params} if params else {}),
            )
            return "updated"
        raise AssertionError(f"unknown kind {kind}")

    def actors(self) -> dict[str, Callable[[], tuple[Any, ...]]]:
        client = self.world.client

        def make(who: str, steps: Sequence[Step]) -> Callable[[], tuple[Any, ...]]:
            def actor() -> tuple[Any, ...]:
                seen: dict[tuple[int, int], int] = {}
                answers: list[Any] = []
                for step in steps:
                    try:
                        self.call(client, who, step, seen, answers)
                    except ClientError as exc:
                        answers.append(exc.response["Error"]["Code"])
                    except BotoCoreError as exc:  # a lost answer (a fault): the call may have landed
                        answers.append(type(exc).__name__)
                return tuple(answers)

            return actor

        return {who: make(who, steps) for who, steps in zip(self.program.names, self.program.actors, strict=True)}


# ---------------------------------------------------------------- two-region programs (issue 38)
#
# A *regional* program: 2 actors of 1-2 calls each on 2 items of a global table (PK/SK) with replicas
# in us-east-1 and us-west-2 (MRSC: and us-east-2); each call is made in one of the two regions, with
# that region's plain boto3 client. Every write becomes a delivery per other replica, a step explore
# orders (labkit.races.replication), so exhaustive search's orders count the deliveries as well. The
# calls: GetItem (consistent: it reads its region only), PutItem of what the actor read plus a number,
# UpdateItem SET and ADD, a PutItem guarded by attribute_not_exists (the marker's write), DeleteItem,
# and a TransactWriteItems of both items (its items replicate one by one). ``converge`` False: the
# outcome is the replicas as the run left them (the deliveries it never made still pending).

REGION_NAMES = ("us-east-1", "us-west-2")
#: Regional call kinds, each made in its step's region.
REGIONAL_KINDS = ("get", "put_from_read", "set", "add", "create", "delete", "transact")


@dataclass(frozen=True)
class RegionalStep:
    kind: str
    region: int
    item: int
    value: int = 1


@dataclass(frozen=True)
class RegionalProgram:
    initial: tuple[int | None, ...]
    actors: tuple[tuple[RegionalStep, ...], ...]
    strong: bool = False
    converge: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple("ABC"[: len(self.actors)])

    def writes(self) -> int:
        return sum(1 for steps in self.actors for s in steps if s.kind != "get")

    def steps(self) -> int:
        """Calls and deliveries: a write makes one per other replica and item (MRSC: two other replicas)."""
        others = 2 if self.strong else 1
        items = sum(2 if s.kind == "transact" else 1 for steps in self.actors for s in steps if s.kind != "get")
        return sum(len(steps) for steps in self.actors) + others * items


@st.composite
def regional_programs(draw: st.DrawFn, most_calls: int = 2, most_steps: int = 6) -> RegionalProgram:
    """A two-region program: 2 actors of 1-``most_calls`` calls on 2 items, at most ``most_steps`` calls and
    deliveries in all; MREC mostly, MRSC a quarter."""
    initial = tuple(draw(st.lists(st.none() | st.integers(0, 2), min_size=2, max_size=2)))
    step = st.builds(
        RegionalStep,
        st.sampled_from(REGIONAL_KINDS),
        st.integers(0, 1),
        st.integers(0, 1),
        st.integers(1, 3),
    )
    actors = tuple(tuple(draw(st.lists(step, min_size=1, max_size=most_calls))) for _ in range(2))
    strong = draw(st.integers(0, 3)) == 0
    converge = draw(st.booleans())
    program = RegionalProgram(initial, actors, strong, converge)
    while program.steps() > most_steps:  # exhaustive search is the oracle: keep its orders few
        longest = max(range(2), key=lambda i: len(program.actors[i]))
        if len(program.actors[longest]) > 1:
            cut = tuple(a[:-1] if i == longest else a for i, a in enumerate(program.actors))
        else:  # one call each: writes become reads
            cut = (
                tuple(tuple(RegionalStep("get", s.region, s.item) for s in a) for a in program.actors[:1])
                + program.actors[1:]
            )
        program = RegionalProgram(initial, cut, strong, converge)
    return program


def _regional_key(item: int) -> dict[str, Any]:
    return {"PK": {"S": f"ITEM#{item}"}, "SK": {"S": "X"}}


@dataclass
class RegionalWorld:
    """One endpoint's two global tables (MREC, MRSC) and each region's client."""

    conns: dict[bool, Connection]
    clients: dict[bool, dict[str, Any]]

    def conn(self, program: RegionalProgram) -> Connection:
        return self.conns[program.strong]

    def actors(self, program: RegionalProgram) -> dict[str, Callable[[], list[Any]]]:
        table, clients = self.conns[program.strong].table_name, self.clients[program.strong]

        def actor(steps: tuple[RegionalStep, ...]) -> Callable[[], list[Any]]:
            def run() -> list[Any]:
                answers: list[Any] = []
                read = 0
                for s in steps:
                    client = clients[REGION_NAMES[s.region]]
                    key = _regional_key(s.item)
                    try:
                        if s.kind == "get":
                            item = client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
                            read = int(item["n"]["N"]) if item else 0
                            answers.append(read if item else None)
                            continue
                        if s.kind == "put_from_read":
                            client.put_item(TableName=table, Item={**key, "n": {"N": str(read + s.value)}})
                        elif s.kind in ("set", "add"):
                            expression = "SET n = :v" if s.kind == "set" else "ADD n :v"
                            client.update_item(
                                TableName=table,
                                Key=key,
                                UpdateExpression=expression,
                                ExpressionAttributeValues={":v": {"N": str(s.value)}},
                            )
                        elif s.kind == "create":
                            client.put_item(
                                TableName=table,
                                Item={**key, "n": {"N": str(s.value)}},
                                ConditionExpression="attribute_not_exists(PK)",
                            )
                        elif s.kind == "delete":
                            client.delete_item(TableName=table, Key=key)
                        else:
                            client.transact_write_items(
                                TransactItems=[
                                    {"Put": {"TableName": table, "Item": {**key, "n": {"N": str(s.value)}}}},
                                    {
                                        "Update": {
                                            "TableName": table,
                                            "Key": _regional_key(1 - s.item),
                                            "UpdateExpression": "ADD n :v",
                                            "ExpressionAttributeValues": {":v": {"N": "1"}},
                                        }
                                    },
                                ]
                            )
                        answers.append("ok")
                    except ClientError as exc:
                        answers.append(str(exc.response["Error"]["Code"]))
                return answers

            return run

        return {name: actor(steps) for name, steps in zip(program.names, program.actors, strict=True)}

    def setup(self, program: RegionalProgram) -> Callable[[], None]:
        table, east = self.conns[program.strong].table_name, self.clients[program.strong][REGION_NAMES[0]]

        def reset() -> None:
            pairs = [
                (_regional_key(i), None if n is None else {**_regional_key(i), "n": {"N": str(n)}})
                for i, n in enumerate(program.initial)
            ]
            reset_items(east, {table: pairs})

        return reset

    def final_state(self, program: RegionalProgram, res: Interleaving) -> Any:
        """Every region's two items, and every actor's answers."""
        table, clients = self.conns[program.strong].table_name, self.clients[program.strong]
        regions = []
        keys = [_regional_key(item) for item in range(2)]
        for region in sorted(clients):  # one consistent BatchGetItem per region
            got = clients[region].batch_get_item(RequestItems={table: {"Keys": keys, "ConsistentRead": True}})
            assert not got["UnprocessedKeys"], f"the final read was not all answered: {got['UnprocessedKeys']}"
            found = {i["PK"]["S"]: int(i["n"]["N"]) for i in got["Responses"][table]}
            regions.append((region, tuple(found.get(k["PK"]["S"]) for k in keys)))
        answers = tuple((name, repr(res.results.get(name, res.error_codes().get(name)))) for name in program.names)
        return (tuple(regions), answers)
