"""The lab's single table: ensure it exists, wait until active, reset it to empty.

Layout: string ``PK`` and ``SK``, on-demand billing, and a GSI ``email-index``
on the ``email`` attribute (used by the uniqueness lesson to show why a GSI
check cannot enforce uniqueness). Every function here is idempotent.

labkit never resets or deletes a table it did not create: the name must carry
the ``labkit-`` prefix, and on real AWS the table must carry labkit's tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from botocore.exceptions import WaiterError

from . import constants as C
from ._errors_map import map_errors
from .catalogue import Op
from .codec import plain_item
from .errors import LabkitError, TableError, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .backend import Connection

CREATED_BY_TAG = {"Key": "created-by", "Value": "labkit"}


def table_spec(name: str) -> dict[str, Any]:
    """The CreateTable request for the lab table."""
    return {
        "TableName": name,
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
            {"AttributeName": "email", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "GlobalSecondaryIndexes": [
            {
                "IndexName": C.EMAIL_INDEX_NAME,
                "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "Tags": [CREATED_BY_TAG],
    }


def _check_name(name: str) -> None:
    if not name.startswith(C.TABLE_PREFIX):
        raise TableError(f"refusing to touch table {name!r}: labkit only manages tables named {C.TABLE_PREFIX}*")


def ensure_table(conn: Connection, name: str | None = None, *, wait: bool = True) -> str:
    """Create the lab table if it does not exist; wait until it is ACTIVE. Returns its name."""
    name = name or conn.table_name
    _check_name(name)
    status = table_status(conn, name)
    if status is None:
        try:
            with map_errors(Op.CREATE_TABLE, name):
                created = conn.client.create_table(**table_spec(name))
            # AWS answers CREATING (then we wait); a local endpoint's table is ACTIVE at once: no DescribeTable
            status = str(created.get("TableDescription", {}).get("TableStatus") or "") or None
        except LabkitError as exc:
            if error_code(exc) != "ResourceInUseException":
                raise  # someone else creating it at the same moment is fine
    if wait and status != "ACTIVE":  # one DescribeTable when the table is there and ready (every reset)
        wait_until_active(conn, name)
    return name


def wait_until_active(conn: Connection, name: str | None = None) -> None:
    _wait(conn, "table_exists", name or conn.table_name)


def _wait(conn: Connection, waiter: Literal["table_exists", "table_not_exists"], name: str) -> None:
    delay = 1 if conn.is_local else 5
    try:
        with map_errors(f"waiting for {waiter}", name):
            conn.client.get_waiter(waiter).wait(TableName=name, WaiterConfig={"Delay": delay, "MaxAttempts": 120})
    except WaiterError as exc:
        raise TableError(f"table {name!r}: gave up waiting for {waiter} ({exc}); check the backend") from exc


def table_status(conn: Connection, name: str | None = None) -> str | None:
    """The table's ``TableStatus`` (``ACTIVE``, ``CREATING``, ...), or None when there is no such table."""
    try:
        with map_errors(Op.DESCRIBE_TABLE, name or conn.table_name):
            return str(conn.client.describe_table(TableName=name or conn.table_name)["Table"]["TableStatus"])
    except TableError:
        return None


def table_exists(conn: Connection, name: str | None = None) -> bool:
    return table_status(conn, name) is not None


def _check_owned(conn: Connection, name: str) -> None:
    _check_name(name)
    if conn.backend != "aws":
        return
    with map_errors(Op.LIST_TAGS_OF_RESOURCE, name):
        arn = conn.client.describe_table(TableName=name)["Table"]["TableArn"]
        tags = conn.client.list_tags_of_resource(ResourceArn=arn).get("Tags", [])
    if CREATED_BY_TAG not in tags:
        raise TableError(
            f"refusing to reset or delete {name!r}: it does not carry labkit's tag "
            f"{CREATED_BY_TAG['Key']}={CREATED_BY_TAG['Value']}, so labkit did not create it"
        )


def reset_table(conn: Connection, name: str | None = None) -> int:
    """Delete every item in the lab table (creating it first if needed). Returns items deleted."""
    name = ensure_table(conn, name)
    _check_owned(conn, name)
    client = conn.client
    deleted = 0
    kwargs: dict[str, Any] = {"TableName": name, "ProjectionExpression": "PK, SK", "ConsistentRead": True}
    step = C.MAX_BATCH_WRITE_ITEMS
    with map_errors("resetting the table", name):
        while True:
            page = client.scan(**kwargs)
            keys = [{"PK": it["PK"], "SK": it["SK"]} for it in page.get("Items", [])]
            for start in range(0, len(keys), step):
                batch = [{"DeleteRequest": {"Key": k}} for k in keys[start : start + step]]
                request: dict[str, Any] = {name: batch}
                while request:
                    out = client.batch_write_item(RequestItems=request)
                    request = dict(out.get("UnprocessedItems") or {})
            deleted += len(keys)
            if "LastEvaluatedKey" not in page:
                return deleted
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def delete_table(conn: Connection, name: str | None = None) -> bool:
    """Delete the lab table if labkit created it. Returns False when it did not exist."""
    name = name or conn.table_name
    _check_name(name)
    if conn.backend == "aws":  # labkit's tag is read first (DescribeTable, then ListTagsOfResource)
        if not table_exists(conn, name):
            return False
        _check_owned(conn, name)
    try:
        with map_errors(Op.DELETE_TABLE, name):
            conn.client.delete_table(TableName=name)
    except TableError as exc:  # a local endpoint: no DescribeTable first, its "not found" says it
        if exc.__cause__ is not None and error_code(exc.__cause__) == "ResourceNotFoundException":
            return False
        raise
    _wait(conn, "table_not_exists", name)
    return True


def scan_rows(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    """Every item in the table (consistent, paginated scan) as a dict of plain Python values."""
    with map_errors(Op.SCAN, table):
        pages = client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
        return [plain_item(item) for page in pages for item in page.get("Items", [])]


def items_frame(rows: list[dict[str, Any]], first: Sequence[str] = ("PK", "SK"), *, sort: bool = True) -> pd.DataFrame:
    """Items as a DataFrame: the ``first`` columns (those present) in order, then the rest sorted."""
    if not rows:
        return pd.DataFrame(columns=list(first))
    frame = pd.DataFrame(rows)
    cols = [c for c in first if c in frame.columns] + sorted(c for c in frame.columns if c not in first)
    frame = frame[cols]
    return frame.sort_values(["PK", "SK"], kind="stable", ignore_index=True) if sort else frame


def scan_items(conn: Connection, table: str | None = None) -> pd.DataFrame:
    """Every item in the table (consistent, paginated scan) with plain Python values, PK/SK first."""
    return items_frame(scan_rows(conn.client, table or conn.table_name))


__all__ = [
    "delete_table",
    "ensure_table",
    "items_frame",
    "reset_table",
    "scan_items",
    "scan_rows",
    "table_exists",
    "table_spec",
    "table_status",
    "wait_until_active",
]
