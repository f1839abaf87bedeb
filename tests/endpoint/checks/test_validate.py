"""Validation: the engine refuses what DynamoDB refuses, for the whole request, before writing.

Requests go through boto3 with client-side validation and retries off, to a real endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.shared import constants as C
from labkit.shared.backend import Connection
from tests.endpoint.clients import error_code, refused
from tests.endpoint.tables import count_items, key, make_table, scan_all


@pytest.fixture
def table(client: Any) -> Iterator[str]:
    name = make_table(client, gsi=True)
    yield name
    client.delete_table(TableName=name)


def _key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _filler(n: int) -> str:
    return "x" * n


# --- batches are validated whole -------------------------------------------------------------

BAD_PUTS: dict[str, dict[str, Any]] = {
    "oversize item": {"PutRequest": {"Item": {**_key("BIG"), "d": {"S": _filler(C.MAX_ITEM_BYTES)}}}},
    "number-typed key": {"PutRequest": {"Item": {"PK": {"N": "1"}, "SK": {"S": "A"}}}},
    "partition key over 2048 bytes": {"PutRequest": {"Item": _key(_filler(C.MAX_PARTITION_KEY_BYTES + 1))}},
    "sort key over 1024 bytes": {"PutRequest": {"Item": _key("P", _filler(C.MAX_SORT_KEY_BYTES + 1))}},
    "put missing its sort key": {"PutRequest": {"Item": {"PK": {"S": "NOSK"}}}},
    "delete missing its sort key": {"DeleteRequest": {"Key": {"PK": {"S": "NOSK"}}}},
}


@pytest.mark.parametrize("bad", list(BAD_PUTS), ids=list(BAD_PUTS))
def test_batch_write__one_bad_request__validation_exception_and_nothing_written(
    client: Any, table: str, bad: str
) -> None:
    """Two valid puts and one bad request: DynamoDB validates the batch first and writes none."""
    requests = [{"PutRequest": {"Item": _key("OK1")}}, {"PutRequest": {"Item": _key("OK2")}}, BAD_PUTS[bad]]
    code, _ = refused(client.batch_write_item, RequestItems={table: requests})
    assert code == "ValidationException"
    assert scan_all(client, table) == []


def test_batch_write__26_requests__validation_exception(client: Any, table: str) -> None:
    requests = [{"PutRequest": {"Item": _key(f"K{i}")}} for i in range(C.MAX_BATCH_WRITE_ITEMS + 1)]
    code, message = refused(client.batch_write_item, RequestItems={table: requests})
    assert code == "ValidationException"
    assert "less than or equal to 25" in message
    assert scan_all(client, table) == []


def test_batch_write__duplicate_keys__validation_exception(client: Any, table: str) -> None:
    requests = [{"PutRequest": {"Item": _key("D")}}, {"DeleteRequest": {"Key": _key("D")}}]
    assert refused(client.batch_write_item, RequestItems={table: requests}) == (
        "ValidationException",
        "Provided list of item keys contains duplicates",
    )
    assert scan_all(client, table) == []


def test_batch_get__101_keys_over_two_tables__validation_exception(client: Any, table: str) -> None:
    """The limit is on the whole request, not per table."""
    other = make_table(client)
    keys = [_key(f"K{i}") for i in range(51)]
    assert refused(client.batch_get_item, RequestItems={table: {"Keys": keys}, other: {"Keys": keys[:50]}}) == (
        "ValidationException",
        "Too many items requested for the BatchGetItem call",
    )
    client.delete_table(TableName=other)


# --- expressions: a client's syntax error is a 400 ----------------------------------------------


def _put_if(condition: str, message: str) -> tuple[str, dict[str, Any], str]:
    """A PutItem of item X on ``condition``, refused with ``message``."""
    return "put_item", {"Item": _key("X"), "ConditionExpression": condition}, message


SYNTAX: dict[str, tuple[str, dict[str, Any], str]] = {
    "unclosed function": _put_if(
        "attribute_exists(PK", 'Invalid ConditionExpression: Syntax error; token: "<EOF>", near: "PK"'
    ),
    "comparison without right side": _put_if(
        "n >", 'Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ">"'
    ),
    "unknown function": _put_if("foo(PK)", "Invalid ConditionExpression: Invalid function name; function: foo"),
    "empty condition": _put_if("", "Invalid ConditionExpression: The expression can not be empty;"),
    "undefined name": _put_if(
        "attribute_not_exists(#pk)",
        "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #pk",
    ),
    "undefined value": (
        "update_item",
        {"Key": _key("X"), "UpdateExpression": "SET n = :v"},
        "Invalid UpdateExpression: An expression attribute value used in expression is not defined; "
        "attribute value: :v",
    ),
    "OR in a key condition": (
        "query",
        {
            "KeyConditionExpression": "PK = :a OR PK = :b",
            "ExpressionAttributeValues": {":a": {"S": "1"}, ":b": {"S": "2"}},
        },
        "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: OR",
    ),
    "empty projection element": (
        "get_item",
        {"Key": _key("X"), "ProjectionExpression": "n,,s"},
        'Invalid ProjectionExpression: Syntax error; token: ",", near: ",,s"',
    ),
}


@pytest.mark.parametrize("case", list(SYNTAX), ids=list(SYNTAX))
def test_expression__syntax_error__validation_exception_in_dynamodb_words(client: Any, table: str, case: str) -> None:
    """Not a 500 that boto3 retries: a 400 with DynamoDB's message, and nothing written."""
    method, params, message = SYNTAX[case]
    assert refused(getattr(client, method), TableName=table, **params) == ("ValidationException", message)
    assert scan_all(client, table) == []


def test_update__retried_client_mistake__applied_never(client: Any, table: str) -> None:
    """A 400 is not retried: `ADD cnt :one` with a broken condition leaves cnt untouched."""
    client.put_item(TableName=table, Item={**_key("C"), "cnt": {"N": "0"}})
    refused(
        client.update_item,
        TableName=table,
        Key=_key("C"),
        UpdateExpression="ADD cnt :one",
        ConditionExpression="attribute_exists(PK",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert client.get_item(TableName=table, Key=_key("C"))["Item"]["cnt"] == {"N": "0"}


# --- attribute values ---------------------------------------------------------------------------


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"S": "deep"}
    for _ in range(levels):
        value = {"L": [value]}
    return value


BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "39 significant digits": ({"N": "1" * 39}, "Attempting to store more than 38 significant digits in a Number"),
    "overflow": (
        {"N": "1E+126"},
        "Number overflow. Attempting to store a number with magnitude larger than supported range",
    ),
    "underflow": (
        {"N": "1E-131"},
        "Number underflow. Attempting to store a number with magnitude smaller than supported range",
    ),
    "not a number": ({"N": "12abc"}, "A value provided cannot be converted into a number"),
    "string set duplicates": (
        {"SS": ["a", "a"]},
        "One or more parameter values were invalid: Input collection [a, a] contains duplicates.",
    ),
    "number set 1 and 1.0": (
        {"NS": ["1", "1.0"]},
        "One or more parameter values were invalid: Input collection [1, 1.0] contains duplicates.",
    ),
    "binary set duplicates": (
        {"BS": [b"\x00", b"\x00"]},
        "One or more parameter values were invalid: Input collection [AA==, AA==] contains duplicates.",
    ),
    "empty string set": ({"SS": []}, "One or more parameter values were invalid: An string set  may not be empty"),
    "document 33 levels deep": (
        _nested(33),
        "Nesting Levels have exceeded supported limits",
    ),
}


@pytest.mark.parametrize("case", list(BAD_VALUES), ids=list(BAD_VALUES))
def test_put_item__bad_value__validation_exception_and_nothing_written(client: Any, table: str, case: str) -> None:
    value, message = BAD_VALUES[case]
    assert refused(client.put_item, TableName=table, Item={**_key("V"), "v": value}) == (
        "ValidationException",
        message,
    )
    assert scan_all(client, table) == []


@pytest.mark.parametrize("case", ["39 significant digits", "number set 1 and 1.0", "empty string set"])
def test_update_item__bad_value_in_expression_values__validation_exception(client: Any, table: str, case: str) -> None:
    """`SET v = :v` with a value DynamoDB refuses: the item keeps its old value."""
    client.put_item(TableName=table, Item={**_key("U"), "v": {"S": "old"}})
    value, message = BAD_VALUES[case]
    code, got = refused(
        client.update_item,
        TableName=table,
        Key=_key("U"),
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": value},
    )
    assert (code, got) == (
        "ValidationException",
        f"ExpressionAttributeValues contains invalid value: {message} for key :v",
    )
    assert client.get_item(TableName=table, Key=_key("U"))["Item"]["v"] == {"S": "old"}


@pytest.mark.parametrize("where", ["transaction", "batch"])
def test_duplicate_set_elements__in_a_transaction_or_batch__validation_exception(
    client: Any, table: str, where: str
) -> None:
    item = {**_key("S"), "ns": {"NS": ["1", "1.0"]}}
    if where == "transaction":
        code, _ = refused(client.transact_write_items, TransactItems=[{"Put": {"TableName": table, "Item": item}}])
    else:
        code, _ = refused(client.batch_write_item, RequestItems={table: [{"PutRequest": {"Item": item}}]})
    assert code == "ValidationException"
    assert scan_all(client, table) == []


def test_document_32_levels_deep__accepted(client: Any, table: str) -> None:
    client.put_item(TableName=table, Item={**_key("D"), "d": _nested(32)})
    assert client.get_item(TableName=table, Key=_key("D"))["Item"]["d"] == _nested(32)


def test_number_with_38_digits__accepted_and_read_back_exactly(client: Any, table: str) -> None:
    digits = "9" * 38
    client.put_item(TableName=table, Item={**_key("N"), "n": {"N": digits}})
    assert client.get_item(TableName=table, Key=_key("N"))["Item"]["n"] == {"N": digits}


# --- keys ---------------------------------------------------------------------------------------


def test_update_item__empty_string_key__validation_exception(client: Any, table: str) -> None:
    code, message = refused(
        client.update_item,
        TableName=table,
        Key={"PK": {"S": ""}, "SK": {"S": "A"}},
        UpdateExpression="SET n = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    assert code == "ValidationException"
    assert message.endswith("The AttributeValue for a key attribute cannot contain an empty string value. Key: PK")
    assert scan_all(client, table) == []


@pytest.mark.parametrize("method", ["get_item", "delete_item"])
def test_wrong_key_type__get_or_delete__validation_exception(client: Any, table: str, method: str) -> None:
    """Not a 200 with nothing: DynamoDB says the key does not match the schema."""
    assert refused(getattr(client, method), TableName=table, Key={"PK": {"N": "1"}, "SK": {"S": "A"}}) == (
        "ValidationException",
        "The provided key element does not match the schema",
    )


def test_query__key_value_of_the_wrong_type__validation_exception(client: Any, table: str) -> None:
    assert refused(
        client.query,
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"N": "1"}},
    ) == (
        "ValidationException",
        "One or more parameter values were invalid: Condition parameter type does not match schema type",
    )


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("begins_with(PK, :p)", "Query key condition not supported"),
        ("SK = :p", "Query condition missed key schema element: PK"),
    ],
)
def test_query__partition_key_not_compared_with_equals__validation_exception_in_dynamodb_words(
    client: Any, table: str, condition: str, message: str
) -> None:
    """A Query reads one partition: `begins_with` on the partition key, or no partition key, is refused."""
    assert refused(
        client.query,
        TableName=table,
        KeyConditionExpression=condition,
        ExpressionAttributeValues={":p": {"S": "UNIQ#"}},
    ) == ("ValidationException", message)


def test_put_item__gsi_key_of_the_wrong_type__validation_exception(client: Any, table: str) -> None:
    assert refused(client.put_item, TableName=table, Item={**_key("G"), "email": {"N": "1"}}) == (
        "ValidationException",
        "One or more parameter values were invalid: Type mismatch for Index Key email Expected: S Actual: N "
        "IndexName: email-index",
    )
    assert scan_all(client, table) == []


def test_update_item__sets_gsi_key_to_the_wrong_type__validation_exception_and_item_unchanged(
    client: Any, table: str
) -> None:
    client.put_item(TableName=table, Item={**_key("G"), "email": {"S": "a@x.io"}})
    code, message = refused(
        client.update_item,
        TableName=table,
        Key=_key("G"),
        UpdateExpression="SET email = :n",
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    assert code == "ValidationException"
    assert "Type mismatch" in message and "email" in message
    assert client.get_item(TableName=table, Key=_key("G"))["Item"]["email"] == {"S": "a@x.io"}


# --- item size: DynamoDB's 409,600 bytes, not moto's 405,000 ------------------------------------


def test_put_item__exactly_409600_bytes__accepted(client: Any, table: str) -> None:
    item = {**_key("a", "b"), "d": {"S": _filler(C.MAX_ITEM_BYTES - 7)}}  # PK+a, SK+b, d: 7 bytes
    client.put_item(TableName=table, Item=item)
    assert len(client.get_item(TableName=table, Key=_key("a", "b"))["Item"]["d"]["S"]) == C.MAX_ITEM_BYTES - 7


def test_put_item__409601_bytes__item_size_exceeded(client: Any, table: str) -> None:
    item = {**_key("a", "b"), "d": {"S": _filler(C.MAX_ITEM_BYTES - 6)}}
    assert refused(client.put_item, TableName=table, Item=item) == (
        "ValidationException",
        "Item size has exceeded the maximum allowed size",
    )


def test_update_item__growing_past_409600_bytes__validation_exception_and_item_unchanged(
    client: Any, table: str
) -> None:
    client.put_item(TableName=table, Item={**_key("a", "b"), "d": {"S": _filler(300_000)}})
    code, message = refused(
        client.update_item,
        TableName=table,
        Key=_key("a", "b"),
        UpdateExpression="SET e = :e",
        ExpressionAttributeValues={":e": {"S": _filler(200_000)}},
    )
    assert (code, message) == ("ValidationException", "Item size to update has exceeded the maximum allowed size")
    assert "e" not in client.get_item(TableName=table, Key=_key("a", "b"))["Item"]


# --- transactions -------------------------------------------------------------------------------


def test_transact_write__condition_check_without_expression__validation_exception(client: Any, table: str) -> None:
    code, message = refused(
        client.transact_write_items,
        TransactItems=[
            {"Put": {"TableName": table, "Item": _key("T")}},
            {"ConditionCheck": {"TableName": table, "Key": _key("U")}},
        ],
    )
    assert code == "ValidationException"
    assert message == (
        "1 validation error detected: Value null at 'transactItems.2.member.conditionCheck.conditionExpression' "
        "failed to satisfy constraint: Member must not be null"
    )
    assert scan_all(client, table) == []


def test_transact_write__over_4_mb__validation_exception(client: Any, table: str) -> None:
    big = _filler(C.MAX_ITEM_BYTES - 100)
    actions = [{"Put": {"TableName": table, "Item": {**_key(f"T{i}"), "d": {"S": big}}}} for i in range(11)]
    assert refused(client.transact_write_items, TransactItems=actions) == (
        "ValidationException",
        "Transaction request cannot be larger than 4 MB",
    )
    assert scan_all(client, table) == []


def test_transact_get__100_items__answered(client: Any, table: str) -> None:
    """moto stops at 25; DynamoDB reads up to 100."""
    client.put_item(TableName=table, Item={**_key("K7"), "n": {"N": "7"}})
    got = client.transact_get_items(
        TransactItems=[{"Get": {"TableName": table, "Key": _key(f"K{i}")}} for i in range(C.MAX_TRANSACT_ITEMS)]
    )["Responses"]
    assert len(got) == C.MAX_TRANSACT_ITEMS
    assert got[7]["Item"]["n"] == {"N": "7"}


def test_transact_get__101_items__validation_exception(client: Any, table: str) -> None:
    code, message = refused(
        client.transact_get_items,
        TransactItems=[{"Get": {"TableName": table, "Key": _key(f"K{i}")}} for i in range(C.MAX_TRANSACT_ITEMS + 1)],
    )
    assert code == "ValidationException"
    assert "less than or equal to 100" in message


# --- expression attributes, on the lab table --------------------------------------------------


def test_validation__unused_expression_attribute_value__rejected_and_nothing_written(
    lab: Connection,
) -> None:
    """PutItem with a value no expression uses: ValidationException naming the key."""
    with pytest.raises(ClientError) as caught:
        lab.client.put_item(
            TableName=lab.table_name,
            Item=key("V"),
            ConditionExpression="attribute_not_exists(PK)",
            ExpressionAttributeValues={":x": {"S": "unused"}},
        )
    assert error_code(caught.value) == "ValidationException"
    assert caught.value.response["Error"]["Message"] == (
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}"
    )
    assert count_items(lab) == 0


def test_validation__unused_expression_attribute_name__rejected(lab: Connection) -> None:
    """UpdateItem with a name no expression uses: ValidationException naming the key."""
    with pytest.raises(ClientError) as caught:
        lab.client.update_item(
            TableName=lab.table_name,
            Key=key("V"),
            UpdateExpression="SET v = :v",
            ExpressionAttributeNames={"#x": "x"},
            ExpressionAttributeValues={":v": {"N": "1"}},
        )
    assert caught.value.response["Error"]["Message"] == (
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}"
    )


def test_validation__unused_value_inside_a_transaction_action__rejects_the_transaction(
    lab: Connection,
) -> None:
    """Each TransactWriteItems action is checked on its own; nothing of the transaction lands."""
    table = lab.table_name
    with pytest.raises(ClientError) as caught:
        lab.client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": key("OK")}},
                {
                    "Put": {
                        "TableName": table,
                        "Item": key("BAD"),
                        "ConditionExpression": "attribute_not_exists(PK)",
                        "ExpressionAttributeValues": {":unused": {"N": "1"}},
                    }
                },
            ]
        )
    assert error_code(caught.value) == "ValidationException"
    assert "keys: {:unused}" in caught.value.response["Error"]["Message"]
    assert count_items(lab) == 0


@pytest.mark.parametrize("n_items", [0, C.MAX_TRANSACT_ITEMS + 1])
def test_validation__transaction_with_no_or_too_many_items__validation_exception(lab: Connection, n_items: int) -> None:
    """0 or 101 actions: ValidationException (botocore's own check switched off to reach us)."""
    client: Any = lab.new_client(parameter_validation=False)
    items = [{"Put": {"TableName": lab.table_name, "Item": key(f"I{i}")}} for i in range(n_items)]
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=items)
    assert error_code(caught.value) == "ValidationException"
    assert "transactItems" in caught.value.response["Error"]["Message"]
    assert count_items(lab) == 0
