"""One counter item (``KEY``, holding ``n``) and the actors that increment it: the naive read-modify-write that
loses updates, one conditional attempt, the conditional increment retried; two actors raced in a given order,
an outcome that says whether an update was lost, and a picklable op for the stress runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from labkit.races import Interleaving, run_interleaving
from labkit.shared.backend import Connection

KEY = {"PK": {"S": "COUNTER"}, "SK": {"S": "C"}}


def put_counter(conn: Connection, n: int = 0) -> None:
    conn.client.put_item(TableName=conn.table_name, Item={**KEY, "n": {"N": str(n)}})


def read_counter(conn: Connection) -> int:
    item = conn.client.get_item(TableName=conn.table_name, Key=KEY, ConsistentRead=True)["Item"]
    return int(item["n"]["N"])


def naive_increment(table: str) -> Callable[[Any], int]:
    """GetItem, then PutItem n+1: the read-modify-write that loses updates."""

    def actor(client: Any) -> int:
        n = int(client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]["n"]["N"])
        client.put_item(TableName=table, Item={**KEY, "n": {"N": str(n + 1)}})
        return n + 1

    return actor


def conditional_increment(client: Any, table: str) -> int:
    """One attempt: read n, then SET n = n+1 only if n is still what was read."""
    n = int(client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]["n"]["N"])
    client.update_item(
        TableName=table,
        Key=KEY,
        UpdateExpression="SET n = :new",
        ConditionExpression="n = :old",
        ExpressionAttributeValues={":new": {"N": str(n + 1)}, ":old": {"N": str(n)}},
    )
    return n + 1


def safe_increment(table: str) -> Callable[[Any], int]:
    """Conditional increment, re-read and retry on ConditionalCheckFailed."""

    def actor(client: Any) -> int:
        while True:
            try:
                return conditional_increment(client, table)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise

    return actor


def race_two(conn: Connection, make: Callable[[str], Callable[[Any], int]], order: Any) -> Interleaving:
    """Two actors A and B made by ``make`` (e.g. :func:`naive_increment`) run in ``order`` from a counter at 0."""
    put_counter(conn)
    actor = make(conn.table_name)
    return run_interleaving({"A": actor, "B": actor}, order, conn=conn)


class StressOp:
    """A picklable op (module-level class): one conditional increment on ``table``."""

    def __init__(self, table: str) -> None:
        self.table = table

    def __call__(self, client: Any, worker: int, seq: int) -> int:
        return conditional_increment(client, self.table)


def lost(conn: Connection) -> Callable[[Interleaving], dict[str, Any]]:
    def outcome(res: Interleaving) -> dict[str, Any]:
        final = read_counter(conn)
        return {"final": final, "lost_update": final < 2}

    return outcome
