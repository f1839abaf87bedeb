"""The fault tests' shared pieces: items keyed ``PK``/``X`` (made and read back), a client with a given number of
attempts, a sign-up actor, the ``injected`` column of a run's history, and the reason of a TransactionConflict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labkit.patterns import uniqueness as U
from labkit.shared.backend import Connection

CONFLICT = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}


def item(pk: str, **attrs: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "X"}, **{k: {"S": v} for k, v in attrs.items()}}


def get(conn: Connection, pk: str) -> dict[str, Any] | None:
    out = conn.client.get_item(TableName=conn.table_name, Key={"PK": {"S": pk}, "SK": {"S": "X"}}, ConsistentRead=True)
    return out.get("Item")


def signup(table: str, email: str, username: str) -> Callable[[Any], str]:
    def actor(client: Any) -> str:
        return U.register(client, table, email=email, username=username).account_id

    return actor


def injected(res: Any) -> list[str]:
    return [v if isinstance(v, str) else "" for v in res.history["injected"]]


def client(conn: Connection, attempts: int = 1, mode: str = "standard") -> Any:
    return conn.new_client(retries={"total_max_attempts": attempts, "mode": mode})
