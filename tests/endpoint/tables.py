"""Tables and items for the engine's tests: a table factory (``make_table``), the CreateTable request of an
on-demand table with one hash key (``hash_table``), a GSI added by UpdateTable, a lab table's key, every
item of a table (sorted), how many items a lab table holds, and one write to a hot key."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from labkit.shared.backend import Connection
from tests.endpoint.clients import error_code


def key(pk: str, sk: str = "A") -> dict[str, Any]:
    """A lab table's key."""
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def hash_table(name: str, key_name: str = "PK") -> dict[str, Any]:
    """The CreateTable request of an on-demand table keyed by one string attribute (for a raw request)."""
    return {
        "TableName": name,
        "KeySchema": [{"AttributeName": key_name, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": key_name, "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


def make_table(
    client: Any,
    *,
    range_key: bool = True,
    gsi: bool = False,
    stream: bool = False,
    lsi: bool = False,
    name: str | None = None,
    keys: Sequence[tuple[str, str]] | None = None,
) -> str:
    """A fresh PAY_PER_REQUEST table PK (S) [+ SK (S)] [+ GSI email-index on email (S)] [+ LSI at-index on at (S)];
    ``keys`` names other key attributes and their types, the hash key first (``[("id", "N"), ("seq", "N")]``)."""
    name = name or f"labkit-eng-{uuid.uuid4().hex[:10]}"
    if keys is None:
        keys = [("PK", "S"), ("SK", "S")] if range_key else [("PK", "S")]
    schema = [{"AttributeName": a, "KeyType": kind} for (a, _), kind in zip(keys, ("HASH", "RANGE"), strict=False)]
    attrs = [{"AttributeName": a, "AttributeType": t} for a, t in keys]
    extra: dict[str, Any] = {}
    if gsi:
        attrs.append({"AttributeName": "email", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "email-index",
                "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if lsi:
        attrs.append({"AttributeName": "at", "AttributeType": "S"})
        extra["LocalSecondaryIndexes"] = [
            {
                "IndexName": "at-index",
                "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if stream:
        extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    client.create_table(
        TableName=name, KeySchema=schema, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST", **extra
    )
    return name


def create_gsi(client: Any, table: str, index: str, attribute: str, kind: str = "S", projection: str = "ALL") -> None:
    """UpdateTable: a new GSI ``index`` keyed on ``attribute`` (of type ``kind``) alone, defined in the request."""
    client.update_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": kind}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": index,
                    "KeySchema": [{"AttributeName": attribute, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": projection},
                }
            }
        ],
    )


def scan_all(client: Any, table: str) -> list[dict[str, Any]]:
    return sorted(
        client.scan(TableName=table, ConsistentRead=True)["Items"],
        key=lambda i: json.dumps(i, sort_keys=True, default=repr),
    )


def count_items(lab: Connection) -> int:
    """How many items the lab table holds."""
    return int(lab.client.scan(TableName=lab.table_name, Select="COUNT")["Count"])


def hot_write(client: Any, table: str) -> str:
    """One ``ADD n :one`` to the hot key (PK HOT, SK X): "ok", or the error code it was refused with."""
    try:
        client.update_item(
            TableName=table,
            Key={"PK": {"S": "HOT"}, "SK": {"S": "X"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    except ClientError as exc:
        return error_code(exc)
    return "ok"
