"""The lab's single table: ensure it exists, wait until active, reset it to empty.

Layout: string ``PK`` and ``SK``, on-demand billing, and a GSI ``email-index``
on the ``email`` attribute (used by the uniqueness lesson to show why a GSI
check cannot enforce uniqueness). Every function here is idempotent.

labkit never resets or deletes a table it did not create: the name must carry
the ``labkit-`` prefix, and on real AWS the table must carry labkit's tag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from . import constants as C
from .errors import TableError, error_code

if TYPE_CHECKING:
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
        raise TableError(
            f"refusing to touch table {name!r}: labkit only manages tables named {C.TABLE_PREFIX}*"
        )


def _is_missing(exc: ClientError) -> bool:
    return error_code(exc) == "ResourceNotFoundException"


def ensure_table(conn: Connection, name: str | None = None, *, wait: bool = True) -> str:
    """Create the lab table if it does not exist; wait until it is ACTIVE. Returns its name."""
    name = name or conn.table_name
    _check_name(name)
    client = conn.client
    try:
        client.describe_table(TableName=name)
    except ClientError as exc:
        if not _is_missing(exc):
            raise
        try:
            client.create_table(**table_spec(name))
        except ClientError as create_exc:
            if error_code(create_exc) != "ResourceInUseException":
                raise  # someone else creating it at the same moment is fine
    if wait:
        wait_until_active(conn, name)
    return name


def wait_until_active(conn: Connection, name: str | None = None) -> None:
    name = name or conn.table_name
    conn.client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1 if conn.is_local else 5, "MaxAttempts": 120}
    )


def table_exists(conn: Connection, name: str | None = None) -> bool:
    try:
        conn.client.describe_table(TableName=name or conn.table_name)
    except ClientError as exc:
        if _is_missing(exc):
            return False
        raise
    return True


def _check_owned(conn: Connection, name: str) -> None:
    _check_name(name)
    if conn.backend != "aws":
        return
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
    while True:
        page = client.scan(**kwargs)
        keys = [{"PK": it["PK"], "SK": it["SK"]} for it in page.get("Items", [])]
        for start in range(0, len(keys), 25):
            batch = [{"DeleteRequest": {"Key": k}} for k in keys[start : start + 25]]
            request: dict[str, Any] = {name: batch}
            while request:
                out = client.batch_write_item(RequestItems=request)
                request = out.get("UnprocessedItems") or {}
        deleted += len(keys)
        if "LastEvaluatedKey" not in page:
            return deleted
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def delete_table(conn: Connection, name: str | None = None) -> bool:
    """Delete the lab table if labkit created it. Returns False when it did not exist."""
    name = name or conn.table_name
    if not table_exists(conn, name):
        return False
    _check_owned(conn, name)
    conn.client.delete_table(TableName=name)
    conn.client.get_waiter("table_not_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1 if conn.is_local else 5, "MaxAttempts": 120}
    )
    return True


__all__ = ["delete_table", "ensure_table", "reset_table", "table_exists", "table_spec", "wait_until_active"]
