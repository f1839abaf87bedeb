"""Looking at the table: an account beside its markers, every item as a DataFrame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ...shared.codec import from_wire, to_wire
from ...shared.table import items_frame, scan_rows
from .keys import DEFAULT_FIELDS, Fields, attributes, field_value, label, marker_key
from .lifecycle import require_account
from .reasons import named_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def account_items(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    *,
    fields: Fields = DEFAULT_FIELDS,
) -> pd.DataFrame:
    """The account and its markers side by side; a missing marker shows ``present=False``."""
    account = require_account(client, table, account_id)
    rows: list[dict[str, Any]] = [{**account, "present": True}]
    for spec, namespace in fields.items():
        value = field_value(spec, account)
        if value is None:
            continue
        key = marker_key(namespace, value)
        with named_errors(f"reading the {label(spec)} marker", table):
            out = client.get_item(TableName=table, Key=to_wire(key), ConsistentRead=True)
        item = out.get("Item")
        rows.append({**from_wire(item), "present": True} if item else {**key, "present": False})
    columns = ["PK", "SK", "id", "owner", *attributes(fields), "field", "value", "present"]
    return items_frame(rows, columns, sort=False)


def table_items(client: DynamoDBClient, table: str) -> pd.DataFrame:
    """Every item in the table (consistent Scan), sorted by key: accounts and markers together."""
    return items_frame(scan_rows(client, table), ["PK", "SK", "id", "owner", "email", "username", "field", "value"])


__all__ = ["account_items", "table_items"]
