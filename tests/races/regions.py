"""Team code across two regions, for the race lab's replication tests: two plain boto3 clients, two region_names.

The two programs issue 38 names, each in its naive and fixed forms:

* the settings item's version-guarded update (lesson 01 §7): read it strongly consistently, write the
  change with ``ConditionExpression: version = :read``, retry a refusal (bounded);
* the sign-up's marker transaction (lesson 02 §4-5: ``recipes.uniqueness.register_request``).

Naive: each admin (each sign-up) uses its own region's client. Home-region: every write of the item
(every sign-up transaction) goes to one region's client. MRSC: each its own region, on an MRSC table.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

import labkit
from labkit.races import Interleaving
from labkit.shared.backend import Connection
from recipes.uniqueness import register_request

EAST, WEST, OHIO = "us-east-1", "us-west-2", "us-east-2"
SETTINGS = {"PK": {"S": "SETTINGS"}, "SK": {"S": "GLOBAL"}}
#: what a write may be refused with and still be retried: another writer got there first (its region or another)
RETRY = {"ConditionalCheckFailedException", "ReplicatedWriteConflictException", "TransactionConflictException"}


def region_client(url: str, region: str) -> Any:
    """A plain boto3 client of the lab's endpoint in ``region``, as team code makes one (no retries of its own)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name=region,
        aws_access_key_id="labkit",
        aws_secret_access_key="labkit",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


@contextmanager
def global_table(url: str, *, strong: bool = False) -> Iterator[tuple[Connection, dict[str, Any]]]:
    """A fresh lab table in us-east-1 with a replica in us-west-2 (MRSC: and us-east-2); its clients per region."""
    name = f"labkit-regions-{uuid.uuid4().hex[:8]}"
    conn = Connection("embedded", url, EAST, name)
    labkit.ensure_table(conn, name)
    regions = [WEST, OHIO] if strong else [WEST]
    extra: dict[str, Any] = {"MultiRegionConsistency": "STRONG"} if strong else {}
    conn.client.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": r}} for r in regions], **extra)
    clients = {region: region_client(url, region) for region in [EAST, *regions]}
    try:
        yield conn, clients
    finally:
        for client in reversed(clients.values()):  # each region's table, the replicas first
            with suppress(ClientError):
                client.delete_table(TableName=name)


def code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def reset(client: Any, table: str) -> None:
    """Every item deleted, then the settings item at version 1 (its writes replicate; the lab delivers them)."""
    for item in client.scan(TableName=table, ConsistentRead=True)["Items"]:
        client.delete_item(TableName=table, Key={"PK": item["PK"], "SK": item["SK"]})
    client.put_item(TableName=table, Item={**SETTINGS, "version": {"N": "1"}, "flags": {"SS": ["base"]}})


def guarded_flag(client: Any, table: str, flag: str, attempts: int = 3) -> str:
    """Lesson 01 §7's guarded update: add ``flag``; ``ok``, or the code the last attempt was refused with."""
    last = ""
    for _ in range(attempts):
        item = client.get_item(TableName=table, Key=SETTINGS, ConsistentRead=True)["Item"]
        version = int(item["version"]["N"])
        flags = sorted({*item["flags"]["SS"], flag})
        try:
            client.put_item(
                TableName=table,
                Item={**SETTINGS, "version": {"N": str(version + 1)}, "flags": {"SS": flags}},
                ConditionExpression="version = :read",
                ExpressionAttributeValues={":read": {"N": str(version)}},
            )
            return "ok"
        except ClientError as exc:
            last = code(exc)
            if last not in RETRY:
                raise
    return last


def admins(clients: Mapping[str, Any], table: str, home: str | None = None) -> dict[str, Callable[[], str]]:
    """Admin A in us-east-1 adds flag ``a``, admin B in us-west-2 flag ``b``; ``home``: both write there."""
    a, b = clients[home or EAST], clients[home or WEST]
    return {"A": lambda: guarded_flag(a, table, "a"), "B": lambda: guarded_flag(b, table, "b")}


def no_change_lost(clients: Mapping[str, Any], table: str) -> Callable[[Interleaving], None]:
    """Every admin told ``ok`` finds its flag in the settings item, in every region."""

    def invariant(res: Interleaving) -> None:
        told = {flag for flag, actor in (("a", "A"), ("b", "B")) if res.results.get(actor) == "ok"}
        for region, client in clients.items():
            flags = set(client.get_item(TableName=table, Key=SETTINGS, ConsistentRead=True)["Item"]["flags"]["SS"])
            assert told <= flags, (
                f"a change was lost in {region}: the item holds {sorted(flags)}, {sorted(told)} told ok"
            )

    return invariant


def sign_up(client: Any, table: str, account: str, username: str) -> str:
    """Lesson 02's marker transaction for ann@example.com: ``ok``, or the code it was refused with."""
    request = register_request(table, account, "ann@example.com", username, str(uuid.uuid4()))  # one per sign-up
    try:
        client.transact_write_items(**request)
    except ClientError as exc:
        return code(exc)
    return "ok"


def sign_ups(clients: Mapping[str, Any], table: str, home: str | None = None) -> dict[str, Callable[[], str]]:
    """Sign-up A in us-east-1, B in us-west-2, the same email; ``home``: both transactions sent there."""
    a, b = clients[home or EAST], clients[home or WEST]
    return {"A": lambda: sign_up(a, table, "a1", "ann"), "B": lambda: sign_up(b, table, "b2", "annie")}


def one_owner(clients: Mapping[str, Any], table: str) -> Callable[[Interleaving], None]:
    """One account holds the email, in every region, and the email's marker names it."""

    def invariant(res: Interleaving) -> None:
        for region, client in clients.items():
            items = client.scan(TableName=table, ConsistentRead=True)["Items"]
            holders = sorted(i["id"]["S"] for i in items if i.get("email", {}).get("S") == "ann@example.com")
            marker = [i["owner"]["S"] for i in items if i["PK"]["S"] == "UNIQ#EMAIL#ann@example.com"]
            assert len(holders) <= 1, (
                f"{region}: accounts {holders} both hold ann@example.com; its marker names {marker}"
            )
            assert marker == holders, (
                f"{region}: the marker names {marker}, the accounts holding the email are {holders}"
            )

    return invariant
