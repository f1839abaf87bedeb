"""Two accounts, x and y, 100 each (``ACCT#<name>``/``BALANCE``): what the sub-actor and asyncio tests move money
between."""

from __future__ import annotations

from typing import Any

from labkit.shared.backend import Connection


def account(name: str) -> dict[str, Any]:
    return {"PK": {"S": f"ACCT#{name}"}, "SK": {"S": "BALANCE"}}


class Accounts:
    """The two accounts on the lab's table, and one client (one attempt per call) to read them."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.table = conn.table_name
        self.client: Any = conn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})

    def setup(self) -> None:
        for name in "xy":
            self.conn.client.put_item(
                TableName=self.table, Item={**account(name), "bal": {"N": "100"}, "v": {"N": "0"}}
            )

    def read(self, name: str) -> tuple[int, int]:
        item = self.client.get_item(TableName=self.table, Key=account(name), ConsistentRead=True)["Item"]
        return int(item["bal"]["N"]), int(item["v"]["N"])

    def guard(self, name: str, bal: int, v: int) -> dict[str, Any]:
        """A TransactWriteItems Update: ``name``'s balance set to ``bal`` if its version is still ``v`` (bumped)."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": account(name),
                "UpdateExpression": "SET bal = :b, v = :v1",
                "ConditionExpression": "v = :v",
                "ExpressionAttributeValues": {":b": {"N": str(bal)}, ":v1": {"N": str(v + 1)}, ":v": {"N": str(v)}},
            }
        }
