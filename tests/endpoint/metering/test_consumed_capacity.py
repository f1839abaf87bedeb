"""ConsumedCapacity as DynamoDB reports it (ReturnConsumedCapacity): 4 KB read steps, 1 KB write
steps on the larger of old and new item, index writes, twice the units in a transaction, a Query's
size read before its filter, a batch per item per table."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.shared import constants as C
from labkit.shared.backend import Connection
from tests.endpoint.tables import key


def _filler(n_bytes: int) -> dict[str, Any]:
    return {"x_pad": {"S": "x" * n_bytes}}


@pytest.mark.parametrize(
    ("size", "consistent", "units"),
    [(100, False, 0.5), (100, True, 1.0), (9000, False, 1.5), (9000, True, 3.0)],
)
def test_consumed_capacity__get_item__4kb_read_steps_on_the_whole_item(
    lab: Connection, size: int, consistent: bool, units: float
) -> None:
    """GetItem: ceil(size / 4 KB) units, halved when eventually consistent."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**key("BIG"), **_filler(size)})
    got = client.get_item(
        TableName=lab.table_name,
        Key=key("BIG"),
        ConsistentRead=consistent,
        ProjectionExpression="PK",
        ReturnConsumedCapacity="TOTAL",
    )
    assert got["ConsumedCapacity"] == {
        "TableName": lab.table_name,
        "CapacityUnits": units,
        "ReadCapacityUnits": units,
    }


def test_consumed_capacity__get_item_missing__costs_the_minimum(lab: Connection) -> None:
    """A GetItem that finds nothing still costs 0.5 units (eventually consistent)."""
    got = lab.client.get_item(TableName=lab.table_name, Key=key("NOPE"), ReturnConsumedCapacity="TOTAL")
    assert got["ConsumedCapacity"]["CapacityUnits"] == 0.5


def test_consumed_capacity__not_requested__is_absent(lab: Connection) -> None:
    """Without ReturnConsumedCapacity no capacity is reported (moto reports a made-up one)."""
    updated = lab.client.update_item(
        TableName=lab.table_name,
        Key=key("X"),
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    assert "ConsumedCapacity" not in updated


def test_consumed_capacity__writes__1kb_steps_on_the_larger_of_old_and_new(
    lab: Connection,
) -> None:
    """Put 2.5 KB: 3 units; shrinking it to a few bytes still costs 3; deleting the small one 1."""
    client, table = lab.client, lab.table_name
    put = client.put_item(TableName=table, Item={**key("W"), **_filler(2500)}, ReturnConsumedCapacity="TOTAL")
    shrink = client.update_item(
        TableName=table,
        Key=key("W"),
        UpdateExpression="REMOVE x_pad",
        ReturnConsumedCapacity="TOTAL",
    )
    delete = client.delete_item(TableName=table, Key=key("W"), ReturnConsumedCapacity="TOTAL")
    assert [r["ConsumedCapacity"]["WriteCapacityUnits"] for r in (put, shrink, delete)] == [
        3.0,
        3.0,
        1.0,
    ]


def test_consumed_capacity__write_with_gsi_attribute__also_writes_the_index(
    lab: Connection,
) -> None:
    """An item carrying `email` lands in email-index too: INDEXES shows both writes."""
    put = lab.client.put_item(
        TableName=lab.table_name,
        Item={**key("U"), "email": {"S": "ada@example.com"}},
        ReturnConsumedCapacity="INDEXES",
    )
    assert put["ConsumedCapacity"] == {
        "TableName": lab.table_name,
        "CapacityUnits": 2.0,
        "WriteCapacityUnits": 2.0,
        "Table": {"CapacityUnits": 1.0, "WriteCapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {C.EMAIL_INDEX_NAME: {"CapacityUnits": 1.0, "WriteCapacityUnits": 1.0}},
    }


def test_consumed_capacity__transact_write__twice_the_units_per_item(lab: Connection) -> None:
    """Two 1.5 KB puts in a transaction: 2 x 2 units each = 8; a ConditionCheck reads 2."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=key("CHECKED"))
    result = client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {**key("T1"), **_filler(1500)}}},
            {"Put": {"TableName": table, "Item": {**key("T2"), **_filler(1500)}}},
            {
                "ConditionCheck": {
                    "TableName": table,
                    "Key": key("CHECKED"),
                    "ConditionExpression": "attribute_exists(PK)",
                }
            },
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert result["ConsumedCapacity"] == [
        {
            "TableName": table,
            "CapacityUnits": 10.0,
            "ReadCapacityUnits": 2.0,
            "WriteCapacityUnits": 8.0,
        }
    ]


def test_consumed_capacity__transact_get__twice_the_strong_read_units(lab: Connection) -> None:
    """TransactGetItems: 2 x 1 unit per small item."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=key("G1"))
    result = client.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": table, "Key": key("G1")}},
            {"Get": {"TableName": table, "Key": key("G2")}},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert result["ConsumedCapacity"][0]["CapacityUnits"] == 4.0


def test_consumed_capacity__query__total_size_read_before_the_filter(lab: Connection) -> None:
    """Query reads three 2 KB items (6 KB): 2 units strong, even when the filter drops them all."""
    client, table = lab.client, lab.table_name
    for sk in ("1", "2", "3"):
        client.put_item(TableName=table, Item={**key("Q", sk), **_filler(2000)})
    result = client.query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        FilterExpression="attribute_exists(nope)",
        ExpressionAttributeValues={":pk": {"S": "Q"}},
        ConsistentRead=True,
        ReturnConsumedCapacity="TOTAL",
    )
    assert (result["Count"], result["ScannedCount"]) == (0, 3)
    assert result["ConsumedCapacity"]["CapacityUnits"] == 2.0


def test_consumed_capacity__batch_get__per_item_per_table(lab: Connection) -> None:
    """BatchGetItem: each item rounded up on its own (two small items = 2 x 0.5)."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=key("B1"))
    client.put_item(TableName=table, Item=key("B2"))
    result = client.batch_get_item(
        RequestItems={table: {"Keys": [key("B1"), key("B2")]}}, ReturnConsumedCapacity="TOTAL"
    )
    assert result["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 1.0, "ReadCapacityUnits": 1.0}]
