"""The issue's own case: a table keyed ``id``, three read-modify-write actors of three calls.

With item identity guessed from the attributes a request carried, PutItem ``{id: x, visits: 1}``
and GetItem ``{id: x}`` looked like two items: DPOR ran 1 order and said "all non-equivalent
orders explored" while most orders lose an update. Named from the table's KeySchema they are one
item: DPOR finds the lost update, and the version-guarded version passes — a guarantee the
slow check confirms against exhaustive search (the same final states).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from labkit.backend import Connection
from labkit.races import Interleaving, explore

Actor = Callable[[Any], Any]


@pytest.fixture
def visits(conn: Connection) -> Iterator[str]:
    """A table keyed ``id`` (not PK/SK), as ordinary team code has it."""
    name = f"labkit-visits-{uuid.uuid4().hex[:8]}"
    conn.client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield name
    conn.client.delete_table(TableName=name)


PAGE = {"id": {"S": "page-1"}}


def setup_for(conn: Connection, table: str) -> Callable[[], None]:
    def setup() -> None:
        conn.client.put_item(
            TableName=table, Item={**PAGE, "visits": {"N": "0"}, "v": {"N": "0"}, "title": {"S": "Home"}}
        )
        for name in "ABC":
            conn.client.delete_item(TableName=table, Key={"id": {"S": f"log-{name}"}})

    return setup


def read(client: Any, table: str) -> tuple[int, int]:
    item = client.get_item(TableName=table, Key=PAGE, ConsistentRead=True)["Item"]
    return int(item["visits"]["N"]), int(item.get("v", {"N": "0"})["N"])


def log(client: Any, table: str, name: str) -> None:
    client.put_item(TableName=table, Item={"id": {"S": f"log-{name}"}, "by": {"S": name}})


def read_modify_write(table: str, name: str) -> Actor:
    """GetItem, PutItem of the whole item (visits + 1), PutItem of its own log item."""

    def actor(client: Any) -> None:
        n, v = read(client, table)
        client.put_item(TableName=table, Item={**PAGE, "visits": {"N": str(n + 1)}})  # the whole item
        log(client, table, name)

    return actor


def version_guarded(table: str, name: str) -> Actor:
    """GetItem, UpdateItem only if the version is the one read, log: a loser ends with CCF."""

    def actor(client: Any) -> None:
        n, v = read(client, table)
        client.update_item(
            TableName=table,
            Key=PAGE,
            UpdateExpression="SET visits = :n, v = :v1",
            ConditionExpression="v = :v",
            ExpressionAttributeValues={":n": {"N": str(n + 1)}, ":v1": {"N": str(v + 1)}, ":v": {"N": str(v)}},
        )
        log(client, table, name)

    return actor


def every_visit_counted(conn: Connection, table: str) -> Callable[[Interleaving], None]:
    def invariant(res: Interleaving) -> None:
        logged = sum("Item" in conn.client.get_item(TableName=table, Key={"id": {"S": f"log-{a}"}}) for a in "ABC")
        n = read(conn.client, table)[0]
        assert n == logged, f"visits is {n} but {logged} visits were logged: an update was lost"

    return invariant


def test_table_keyed_id__three_read_modify_write_actors__dpor_finds_the_lost_update(
    conn: Connection, visits: str
) -> None:
    actors = {name: read_modify_write(visits, name) for name in "ABC"}
    result = explore(
        actors,
        conn=conn,
        setup=setup_for(conn, visits),
        invariant=every_visit_counted(conn, visits),
        strategy="dpor",
    )
    assert not result.passed, result.summary()
    assert result.calls == {"A": 3, "B": 3, "C": 3}
    assert result.message is not None and "an update was lost" in result.message
    assert result.interleaving is not None  # the key schema was asked outside the actors' turns
    assert "DescribeTable" not in set(result.interleaving.history["operation"])


def test_table_keyed_id__version_guarded__dpor_passes_every_class(conn: Connection, visits: str) -> None:
    actors = {name: version_guarded(visits, name) for name in "ABC"}
    result = explore(
        actors,
        conn=conn,
        setup=setup_for(conn, visits),
        invariant=every_visit_counted(conn, visits),
        strategy="dpor",
    )
    assert result.passed, result.summary()
    assert result.guarantee == f"all non-equivalent orders explored (DPOR): {result.runs} runs"
    assert result.runs > 6  # every order of the three conditional updates, at least


@pytest.mark.slow
def test_table_keyed_id__version_guarded__dpor_reaches_every_state_exhaustive_search_reaches(
    conn: Connection, visits: str
) -> None:
    """The guarantee is true: DPOR's runs end in every final state of every schedule."""
    actors = {name: version_guarded(visits, name) for name in "ABC"}
    states: dict[str, set[Any]] = {"exhaustive": set(), "dpor": set()}
    for strategy, seen in states.items():

        def record(res: Interleaving, seen: set[Any] = seen) -> None:
            items = conn.client.scan(TableName=visits, ConsistentRead=True)["Items"]
            seen.add((tuple(sorted(str(sorted(i.items())) for i in items)), tuple(sorted(res.error_codes().items()))))

        result = explore(
            actors, conn=conn, setup=setup_for(conn, visits), invariant=record, strategy=strategy, budget=5000
        )
        assert result.passed
    assert states["dpor"] == states["exhaustive"]
