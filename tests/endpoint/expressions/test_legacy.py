"""Legacy parameters, as DynamoDB still serves them: AttributesToGet, Expected, AttributeUpdates,
KeyConditions, QueryFilter, ScanFilter and ConditionalOperator.

DynamoDB Developer Guide, "Legacy conditional parameters" and the API reference entries for each
(ComparisonOperator: EQ, NE, LE, LT, GE, GT, NOT_NULL, NULL, CONTAINS, NOT_CONTAINS, BEGINS_WITH,
IN, BETWEEN). Reserved words are fine as attribute names here (no expression is written). Over
HTTP with boto3 (client-side validation off) to a real endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.endpoint.clients import refused
from tests.endpoint.tables import make_table


@pytest.fixture
def table(client: Any) -> Iterator[str]:
    name = make_table(client)
    for sk, val, tag in (("alpha", "1", "hello-world"), ("beta", "2", "hello-there"), ("gamma", "3", "goodbye")):
        client.put_item(
            TableName=name,
            Item={
                "PK": {"S": "P"},
                "SK": {"S": sk},
                "val": {"N": val},
                "tag": {"S": tag},
                "name": {"S": f"n-{sk}"},
                "status": {"S": "active" if sk != "gamma" else "done"},
                "flag": {"BOOL": sk == "alpha"},
            },
        )
    yield name
    client.delete_table(TableName=name)


def _key(sk: str = "alpha") -> dict[str, Any]:
    return {"PK": {"S": "P"}, "SK": {"S": sk}}


def _eq(value: dict[str, Any]) -> dict[str, Any]:
    return {"ComparisonOperator": "EQ", "AttributeValueList": [value]}


# --- AttributesToGet -------------------------------------------------------------------------------


def test_attributes_to_get__get_item__exactly_the_named_attributes(client: Any, table: str) -> None:
    """ "AttributesToGet: ... If any of the requested attributes are not found, they do not appear in the result";
    key attributes are not added."""
    item = client.get_item(TableName=table, Key=_key(), AttributesToGet=["name", "val", "nope"])["Item"]
    assert item == {"name": {"S": "n-alpha"}, "val": {"N": "1"}}


def test_attributes_to_get__query_scan_batch_get__exactly_the_named_attributes(client: Any, table: str) -> None:
    """AttributesToGet on Query, Scan and BatchGetItem returns only the named attributes."""
    query = client.query(
        TableName=table, KeyConditions={"PK": _eq({"S": "P"})}, AttributesToGet=["SK"], ConsistentRead=True
    )
    assert query["Items"] == [{"SK": {"S": s}} for s in ("alpha", "beta", "gamma")]
    scan = client.scan(TableName=table, AttributesToGet=["status"])
    assert sorted(i["status"]["S"] for i in scan["Items"]) == ["active", "active", "done"]
    assert all(set(i) == {"status"} for i in scan["Items"])
    batch = client.batch_get_item(RequestItems={table: {"Keys": [_key("beta")], "AttributesToGet": ["tag"]}})
    assert batch["Responses"][table] == [{"tag": {"S": "hello-there"}}]


# --- KeyConditions, QueryFilter, ScanFilter ---------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"S": "al"}]}, ["alpha"]),
        ({"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"S": "b"}, {"S": "gamma"}]}, ["beta", "gamma"]),
        ({"ComparisonOperator": "GT", "AttributeValueList": [{"S": "beta"}]}, ["gamma"]),
    ],
    ids=["BEGINS_WITH", "BETWEEN", "GT"],
)
def test_key_conditions__range_key_operators(
    client: Any, table: str, condition: dict[str, Any], expected: list[str]
) -> None:
    """KeyConditions: EQ on the partition key; EQ, LE, LT, GE, GT, BEGINS_WITH or BETWEEN on the sort key."""
    answer = client.query(TableName=table, KeyConditions={"PK": _eq({"S": "P"}), "SK": condition})
    assert [i["SK"]["S"] for i in answer["Items"]] == expected


def test_key_conditions__scan_index_forward_false__descending(client: Any, table: str) -> None:
    """ScanIndexForward=false works with KeyConditions: sort keys in descending order."""
    answer = client.query(TableName=table, KeyConditions={"PK": _eq({"S": "P"})}, ScanIndexForward=False)
    assert [i["SK"]["S"] for i in answer["Items"]] == ["gamma", "beta", "alpha"]


def test_query_filter__after_the_key_condition__scanned_count_counts_all(client: Any, table: str) -> None:
    """QueryFilter applies after the items are read: Count is what matched, ScannedCount what was read."""
    answer = client.query(
        TableName=table,
        KeyConditions={"PK": _eq({"S": "P"})},
        QueryFilter={"tag": {"ComparisonOperator": "CONTAINS", "AttributeValueList": [{"S": "hello"}]}},
    )
    assert (answer["Count"], answer["ScannedCount"]) == (2, 3)
    flags = client.query(
        TableName=table, KeyConditions={"PK": _eq({"S": "P"})}, QueryFilter={"flag": _eq({"BOOL": True})}
    )
    assert [i["SK"]["S"] for i in flags["Items"]] == ["alpha"]


def test_scan_filter__conditional_operator_or__either_condition(client: Any, table: str) -> None:
    """ScanFilter with ConditionalOperator OR: an item matching any condition is returned (AND, the default: all)."""
    filters = {"val": _eq({"N": "1"}), "status": _eq({"S": "done"})}
    either = client.scan(TableName=table, ScanFilter=filters, ConditionalOperator="OR")
    assert sorted(i["SK"]["S"] for i in either["Items"]) == ["alpha", "gamma"]
    both = client.scan(TableName=table, ScanFilter=filters)
    assert both["Items"] == []
    ranges = client.scan(
        TableName=table,
        ScanFilter={"val": {"ComparisonOperator": "IN", "AttributeValueList": [{"N": "2"}, {"N": "3.0"}]}},
    )
    assert sorted(i["SK"]["S"] for i in ranges["Items"]) == ["beta", "gamma"]


# --- Expected --------------------------------------------------------------------------------------


def test_expected__exists_false__put_only_if_absent(client: Any, table: str) -> None:
    """Expected {Exists: false}: the put succeeds only if the attribute does not exist."""
    client.put_item(TableName=table, Item=_key("new"), Expected={"PK": {"Exists": False}})
    assert refused(client.put_item, TableName=table, Item=_key("new"), Expected={"PK": {"Exists": False}}) == (
        "ConditionalCheckFailedException",
        "The conditional request failed",
    )


def test_expected__value__exists_defaults_to_true(client: Any, table: str) -> None:
    """Expected {Value: v} (Exists defaults to true): the attribute must equal v."""
    client.delete_item(TableName=table, Key=_key("beta"), Expected={"val": {"Value": {"N": "2"}}})
    assert "Item" not in client.get_item(TableName=table, Key=_key("beta"))
    code, _ = refused(client.delete_item, TableName=table, Key=_key("alpha"), Expected={"val": {"Value": {"N": "9"}}})
    assert code == "ConditionalCheckFailedException"


def test_expected__conditional_operator_or_and_and(client: Any, table: str) -> None:
    """ConditionalOperator OR: one matching condition is enough; AND (the default): every condition must match."""
    expected = {"status": _eq({"S": "active"}), "name": _eq({"S": "wrong"})}
    client.put_item(TableName=table, Item={**_key(), "v": {"S": "or"}}, Expected=expected, ConditionalOperator="OR")
    assert client.get_item(TableName=table, Key=_key())["Item"] == {**_key(), "v": {"S": "or"}}
    code, _ = refused(client.put_item, TableName=table, Item=_key("beta"), Expected=expected)
    assert code == "ConditionalCheckFailedException"


def test_expected__begins_with_and_not_null(client: Any, table: str) -> None:
    """BEGINS_WITH and NOT_NULL comparison operators in Expected."""
    client.put_item(
        TableName=table,
        Item=_key("gamma"),
        Expected={
            "tag": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"S": "good"}]},
            "val": {"ComparisonOperator": "NOT_NULL"},
        },
    )
    assert client.get_item(TableName=table, Key=_key("gamma"))["Item"] == _key("gamma")


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        (
            {"val": {"ComparisonOperator": "EQ", "AttributeValueList": []}},
            "One or more parameter values were invalid: Invalid number of argument(s) for the EQ ComparisonOperator",
        ),
        (
            {"val": {"Exists": True, "ComparisonOperator": "NOT_NULL"}},
            "One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for "
            "Attribute: val",
        ),
        (
            {"val": {"Exists": False, "Value": {"N": "1"}}},
            "One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: val",
        ),
        (
            {"val": {"ComparisonOperator": "GT", "AttributeValueList": [{"BOOL": True}]}},
            "One or more parameter values were invalid: ComparisonOperator GT is not valid for BOOL AttributeValue "
            "type",
        ),
    ],
    ids=["wrong count", "Exists with operator", "Value with Exists false", "GT on BOOL"],
)
def test_expected__malformed__validation_exception_and_nothing_written(
    client: Any, table: str, expected: dict[str, Any], message: str
) -> None:
    """Malformed legacy conditions are refused in DynamoDB's words before anything is written."""
    assert refused(client.put_item, TableName=table, Item=_key("x"), Expected=expected) == (
        "ValidationException",
        message,
    )
    assert "Item" not in client.get_item(TableName=table, Key=_key("x"))


def test_legacy_with_expression_attribute_names_refused(client: Any, table: str) -> None:
    """ "ExpressionAttributeNames can only be specified when using expressions" (legacy parameters use none)."""
    assert refused(
        client.get_item, TableName=table, Key=_key(), AttributesToGet=["val"], ExpressionAttributeNames={"#v": "val"}
    ) == ("ValidationException", "ExpressionAttributeNames can only be specified when using expressions")


# --- AttributeUpdates -------------------------------------------------------------------------------


def test_attribute_updates__put_add_delete(client: Any, table: str) -> None:
    """AttributeUpdates: PUT sets (and is the default Action), ADD adds to a number or a set, DELETE without a
    Value removes the attribute, DELETE with a set removes those elements."""
    client.put_item(
        TableName=table, Item={**_key("u"), "tags": {"SS": ["a", "b", "c"]}, "n": {"N": "10"}, "x": {"S": "x"}}
    )
    got = client.update_item(
        TableName=table,
        Key=_key("u"),
        AttributeUpdates={
            "name": {"Value": {"S": "new"}},
            "n": {"Action": "ADD", "Value": {"N": "5"}},
            "tags": {"Action": "DELETE", "Value": {"SS": ["b"]}},
            "more": {"Action": "ADD", "Value": {"NS": ["1", "2"]}},
            "x": {"Action": "DELETE"},
        },
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert got["name"] == {"S": "new"} and got["n"] == {"N": "15"} and "x" not in got
    assert sorted(got["tags"]["SS"]) == ["a", "c"] and sorted(got["more"]["NS"]) == ["1", "2"]


def test_attribute_updates__key_attribute_refused(client: Any, table: str) -> None:
    """ "One or more parameter values were invalid: Cannot update attribute SK. This attribute is part of the key"."""
    assert refused(
        client.update_item,
        TableName=table,
        Key=_key(),
        AttributeUpdates={"SK": {"Action": "PUT", "Value": {"S": "other"}}},
    ) == (
        "ValidationException",
        "One or more parameter values were invalid: Cannot update attribute SK. This attribute is part of the key",
    )
    assert client.get_item(TableName=table, Key=_key())["Item"]["SK"] == {"S": "alpha"}
