"""Helpers and fixtures shared by the races test files."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
from botocore.exceptions import ClientError

from labkit.races import HISTORY_COLUMNS, Interleaving, run_interleaving
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


# --- Helpers and fixtures shared by the invariants test files.


def account(i: str, email: str | None = None, username: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"PK": f"ACCT#{i}", "SK": "PROFILE", "id": i}
    if email is not None:
        item["email"] = email
    if username is not None:
        item["username"] = username
    return item


def marker(ns: str, value: str, owner: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"PK": f"UNIQ#{ns}#{value}", "SK": "LOCK"}
    if owner is not None:
        item["owner"] = owner
    return item


def healthy() -> list[dict[str, Any]]:
    return [
        account("1", "ada@x.io", "ada"),
        marker("EMAIL", "ada@x.io", "1"),
        marker("HANDLE", "ada", "1"),
        account("2", "bob@x.io", "bob"),
        marker("EMAIL", "bob@x.io", "2"),
        marker("HANDLE", "bob", "2"),
    ]


#: A history row: actor, seq, turn (None: after the forced order), operation, start, end, outcome.
Row = tuple[str, int, int | None, str, float, float, str]


def history_of(rows: Iterable[Row]) -> pd.DataFrame:
    """A history frame (:data:`HISTORY_COLUMNS`) of ``rows``, all on key "K", none retried."""
    return pd.DataFrame(
        [
            {
                "actor": a,
                "seq": s,
                "turn": t,
                "operation": op,
                "key": "K",
                "start": t0,
                "end": t1,
                "outcome": out,
                "retries": 0,
            }
            for a, s, t, op, t0, t1, out in rows
        ],
        columns=list(HISTORY_COLUMNS),
    )


def history(*calls: tuple[str, int, str, str, float, float]) -> pd.DataFrame:
    """A history frame of ``calls`` (actor, seq, operation, outcome, start, end), none in a turn."""
    return history_of((a, s, None, op, t0, t1, out) for a, s, op, out, t0, t1 in calls)
