"""Numbers as DynamoDB stores them: normalised on the way in, the full range, exact arithmetic.

DynamoDB Developer Guide, "Supported data types" (Number): "Numbers can have up to 38 digits of
precision ... Positive range: 1E-130 to 9.9999999999999999999999999999999999999E+125 ... Leading
and trailing zeroes are trimmed." A number is stored normalised (``00042`` -> ``42``, ``1.0`` ->
``1``, ``1.5E2`` -> ``150``, ``-0`` -> ``0``), so a key written as ``1.0`` and read as ``1`` is
the same item. Over HTTP with boto3 to a real endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.endpoint.tables import make_table

LARGEST = "9.9999999999999999999999999999999999999E+125"
LARGEST_PLAIN = "99999999999999999999999999999999999999" + "0" * 88
SMALLEST_PLAIN = "0." + "0" * 129 + "1"


@pytest.fixture
def table(client: Any) -> Iterator[str]:
    """A table keyed by numbers: id (N) and seq (N)."""
    name = make_table(client, keys=[("id", "N"), ("seq", "N")])
    yield name
    client.delete_table(TableName=name)


def _key(id_: str = "1", seq: str = "0") -> dict[str, Any]:
    return {"id": {"N": id_}, "seq": {"N": seq}}


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("00042", "42"),
        ("1.0", "1"),
        ("1.5E2", "150"),
        ("-0", "0"),
        ("0.50", "0.5"),
        ("-1.250e-3", "-0.00125"),
        (LARGEST, LARGEST_PLAIN),
        ("1E-130", SMALLEST_PLAIN),
        ("0.000" + "1" * 38, "0.000" + "1" * 38),
    ],
)
def test_number__stored_normalised__read_back_as_dynamodb_stores_it(
    client: Any, table: str, sent: str, stored: str
) -> None:
    """ "Leading and trailing zeroes are trimmed": 00042 -> 42, 1.0 -> 1, 1.5E2 -> 150, -0 -> 0; the full range
    (1E-130 .. 9.9999999999999999999999999999999999999E+125) and 38 significant digits (leading zeros not counted)."""
    client.put_item(
        TableName=table,
        Item={**_key(), "n": {"N": sent}, "ns": {"NS": [sent, "7"]}, "doc": {"M": {"l": {"L": [{"N": sent}]}}}},
    )
    item = client.get_item(TableName=table, Key=_key())["Item"]
    assert item["n"] == {"N": stored}
    assert sorted(item["ns"]["NS"]) == sorted([stored, "7"])
    assert item["doc"] == {"M": {"l": {"L": [{"N": stored}]}}}


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ("1E+126", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
        ("-1E+126", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
        ("1E-131", "Number underflow. Attempting to store a number with magnitude smaller than supported range"),
        ("1" * 39, "Attempting to store more than 38 significant digits in a Number"),
    ],
)
def test_number__out_of_range__validation_exception(client: Any, table: str, sent: str, message: str) -> None:
    """Outside the range or past 38 digits: DynamoDB's ValidationException, nothing written."""
    with pytest.raises(ClientError) as caught:
        client.put_item(TableName=table, Item={**_key(), "n": {"N": sent}})
    assert (caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]) == (
        "ValidationException",
        message,
    )
    assert "Item" not in client.get_item(TableName=table, Key=_key())


def test_number_key__written_as_1_0_read_as_1__the_same_item(client: Any, table: str) -> None:
    """A key is a number, not its spelling: id 1.0 and id 1 (and 1E0) name one item."""
    client.put_item(TableName=table, Item={**_key("1.0", "2.50"), "v": {"S": "first"}})
    client.put_item(TableName=table, Item={**_key("1E0", "2.5"), "v": {"S": "second"}})
    got = client.get_item(TableName=table, Key=_key("1", "25E-1"), ConsistentRead=True)["Item"]
    assert got == {**_key("1", "2.5"), "v": {"S": "second"}}
    assert client.scan(TableName=table)["Count"] == 1


def test_number_sort_key__query_orders_and_compares_numerically(client: Any, table: str) -> None:
    """Sort keys of type N are ordered by value (-1 < 2 < 10 < 1E2), not as text; key conditions compare numbers."""
    for seq in ("10", "-1", "1E2", "2"):
        client.put_item(TableName=table, Item=_key("1", seq))
    answer = client.query(
        TableName=table,
        KeyConditionExpression="id = :id AND seq BETWEEN :low AND :high",
        ExpressionAttributeValues={":id": {"N": "1.00"}, ":low": {"N": "-1"}, ":high": {"N": "10"}},
    )
    assert [item["seq"]["N"] for item in answer["Items"]] == ["-1", "2", "10"]
    backwards = client.query(
        TableName=table,
        KeyConditionExpression="id = :id AND seq > :zero",
        ExpressionAttributeValues={":id": {"N": "1"}, ":zero": {"N": "0"}},
        ScanIndexForward=False,
    )
    assert [item["seq"]["N"] for item in backwards["Items"]] == ["100", "10", "2"]


def test_number_expression_values__normalised_and_compared_by_value(client: Any, table: str) -> None:
    """Expression attribute values are numbers too: SET stores :v normalised; `n = :v` matches 10 with 10.0."""
    client.update_item(
        TableName=table, Key=_key(), UpdateExpression="SET n = :v", ExpressionAttributeValues={":v": {"N": "010.0"}}
    )
    client.put_item(
        TableName=table,
        Item={**_key(), "n": {"N": "11"}},
        ConditionExpression="n = :v",
        ExpressionAttributeValues={":v": {"N": "1E1"}},
    )
    assert client.get_item(TableName=table, Key=_key())["Item"]["n"] == {"N": "11"}


def test_number_arithmetic__exact_to_38_digits(client: Any, table: str) -> None:
    """`SET n = n + :one` and `ADD` keep all 38 digits (no rounding to 28), and write the result normalised."""
    big = "1234567890123456789012345678901234567"
    client.put_item(TableName=table, Item={**_key(), "n": {"N": f"{big}0"}, "m": {"N": "0.1"}})
    got = client.update_item(
        TableName=table,
        Key=_key(),
        UpdateExpression="SET n = n + :one ADD m :m",
        ExpressionAttributeValues={":one": {"N": "1"}, ":m": {"N": "0.20"}},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert got["n"] == {"N": f"{big}1"}
    assert got["m"] == {"N": "0.3"}
    after = client.update_item(
        TableName=table,
        Key=_key(),
        UpdateExpression="SET m = m - :m",
        ExpressionAttributeValues={":m": {"N": "0.3"}},
        ReturnValues="UPDATED_NEW",
    )["Attributes"]
    assert after == {"m": {"N": "0"}}


def test_number_arithmetic__result_out_of_range__validation_exception_item_unchanged(client: Any, table: str) -> None:
    """A sum past 9.9999999999999999999999999999999999999E+125 is refused with DynamoDB's overflow message."""
    client.put_item(TableName=table, Item={**_key(), "n": {"N": LARGEST}})
    with pytest.raises(ClientError) as caught:
        client.update_item(
            TableName=table,
            Key=_key(),
            UpdateExpression="SET n = n + :big",
            ExpressionAttributeValues={":big": {"N": LARGEST}},
        )
    assert caught.value.response["Error"]["Message"] == (
        "Number overflow. Attempting to store a number with magnitude larger than supported range"
    )
    assert client.get_item(TableName=table, Key=_key())["Item"]["n"] == {"N": LARGEST_PLAIN}
