"""The audited counter that explore's tests and ``benchmarks/bench_explore.py`` race, in any key schema.

One counter item holds a count and a version ``v``. Each actor makes three calls: GetItem the
counter, write it from what it read, PutItem its own audit item (a key nobody else touches).

* :meth:`Counter.lost_update`: the write is a PutItem of count + 1 — two actors that read the same
  count lose an update;
* :meth:`Counter.version_guarded`: the write is ``SET count, v = v + 1`` only if ``v`` is the version
  read — a loser ends with ConditionalCheckFailedException and writes no audit item.

The invariant (:meth:`Counter.invariant`): the count equals the number of audit items, the actors
whose update landed. A table keyed ``PK``/``SK`` uses :meth:`Counter.pk_sk`; a table keyed otherwise
names its own counter key, audit keys and count attribute (tests/races/test_explore_keys.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labkit.races import Exploration, Interleaving, explore
from labkit.shared.backend import Connection

Key = dict[str, dict[str, str]]
Actor = Callable[[Any], Any]
#: The actors' names: three of them unless a test says otherwise.
NAMES = "ABC"
#: The counter item of a table keyed PK/SK.
KEY: Key = {"PK": {"S": "COUNTER"}, "SK": {"S": "C"}}


def pk_sk_audit(name: str) -> Key:
    """Actor ``name``'s audit item in a PK/SK table: ``AUDIT#<name>`` / ``A``."""
    return {"PK": {"S": f"AUDIT#{name}"}, "SK": {"S": "A"}}


@dataclass(frozen=True)
class Counter:
    """The counter item ``key`` of ``table`` (its count in ``count``) and each actor's audit item."""

    table: str
    key: Key
    audit_key: Callable[[str], Key]
    count: str = "n"

    @classmethod
    def pk_sk(cls, table: str) -> Counter:
        """The counter :data:`KEY` (``COUNTER`` / ``C``) of a table keyed PK/SK, its count in ``n``."""
        return cls(table, KEY, pk_sk_audit)

    def read(self, client: Any) -> tuple[int, int]:
        """The count and the version, read strongly consistent."""
        item = client.get_item(TableName=self.table, Key=self.key, ConsistentRead=True)["Item"]
        return int(item[self.count]["N"]), int(item["v"]["N"])

    def audit(self, client: Any, name: str, n: int) -> None:
        """Actor ``name`` says its update to ``n`` landed."""
        client.put_item(TableName=self.table, Item={**self.audit_key(name), "n": {"N": str(n)}})

    def start(self, client: Any) -> None:
        """The counter at 0, version 0."""
        client.put_item(TableName=self.table, Item={**self.key, self.count: {"N": "0"}, "v": {"N": "0"}})

    def reset(self, client: Any, names: str = NAMES) -> None:
        """No audit item of ``names``, the counter at 0 (explore's ``setup``)."""
        for name in names:
            client.delete_item(TableName=self.table, Key=self.audit_key(name))
        self.start(client)

    def audited(self, client: Any, names: str = NAMES) -> int:
        """How many of ``names`` wrote their audit item."""
        return sum(
            "Item" in client.get_item(TableName=self.table, Key=self.audit_key(name), ConsistentRead=True)
            for name in names
        )

    def lost_update(self, name: str) -> Actor:
        """GetItem, PutItem count + 1, PutItem its audit item: three calls, loses updates."""

        def actor(client: Any) -> None:
            n, v = self.read(client)
            client.put_item(TableName=self.table, Item={**self.key, self.count: {"N": str(n + 1)}, "v": {"N": str(v)}})
            self.audit(client, name, n + 1)

        return actor

    def guarded_update(self, client: Any) -> int:
        """One attempt: read, then SET count + 1, v + 1 only if v is what was read; the new count."""
        n, v = self.read(client)
        client.update_item(
            TableName=self.table,
            Key=self.key,
            UpdateExpression="SET #count = :n1, v = :v1",
            ConditionExpression="v = :v",
            ExpressionAttributeNames={"#count": self.count},
            ExpressionAttributeValues={":n1": {"N": str(n + 1)}, ":v1": {"N": str(v + 1)}, ":v": {"N": str(v)}},
        )
        return n + 1

    def version_guarded(self, name: str) -> Actor:
        """GetItem, the guarded update, audit: a loser ends with ConditionalCheckFailedException."""

        def actor(client: Any) -> None:
            self.audit(client, name, self.guarded_update(client))

        return actor

    def actors(self, make: Callable[[str], Actor], names: str = NAMES) -> dict[str, Actor]:
        """One actor per name, each made by ``make`` (e.g. ``counter.lost_update``)."""
        return {name: make(name) for name in names}

    def invariant(self, client: Any, names: str = NAMES) -> Callable[[Interleaving], None]:
        """The count equals the number of actors whose update landed (their audit items)."""

        def check(res: Interleaving) -> None:
            n, landed = self.read(client)[0], self.audited(client, names)
            assert n == landed, f"{self.count} is {n} but {landed} updates landed: an update was lost"

        return check

    def explore(
        self, conn: Connection, make: Callable[[str], Actor], names: str = NAMES, **options: Any
    ) -> Exploration:
        """explore() the actors ``make`` makes for ``names``, from a reset counter, against the invariant."""
        return explore(
            self.actors(make, names),
            conn=conn,
            setup=lambda: self.reset(conn.client, names),
            invariant=self.invariant(conn.client, names),
            **options,
        )
