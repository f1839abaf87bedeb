"""Validation in DynamoDB's order and words: the messages a team's tests see for the common mistakes.

Constraint checks come first, all at once ("N validation errors detected: Value '...' at '...'
failed to satisfy constraint: ..."), before any table lookup; then the rules between parameters,
expressions, the table, the keys. Messages are DynamoDB's, as its API reference lists the
constraints and as DynamoDB answers (quoted in each test). Over HTTP with boto3 (client-side
validation off) to a real endpoint.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.endpoint.clients import refused
from tests.endpoint.tables import make_table, scan_all

MISSING = "labkit-no-such-table"


@pytest.fixture(scope="module")
def table(client: Any) -> str:
    """PK (S) + SK (S), a GSI email-index on email (S)."""
    return make_table(client, gsi=True)


def _key(pk: str = "A", sk: str = "1") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


# --- constraints: all at once, before the table is looked up -----------------------------------


def test_constraints__three_bad_enums__three_validation_errors_before_the_table_lookup(client: Any) -> None:
    """ "3 validation errors detected: Value 'INVALID' at 'returnValues' failed to satisfy constraint: Member must
    satisfy enum value set: [...]; ..." — for a table that does not exist: constraints come first."""
    code, message = refused(
        client.put_item,
        TableName=MISSING,
        Item=_key(),
        ReturnValues="INVALID",
        ReturnConsumedCapacity="INVALID",
        ReturnItemCollectionMetrics="INVALID",
    )
    assert code == "ValidationException"
    assert message.startswith("3 validation errors detected: ")
    for part in (
        "Value 'INVALID' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: "
        "[NONE, ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW]",
        "Value 'INVALID' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value "
        "set: [INDEXES, TOTAL, NONE]",
        "Value 'INVALID' at 'returnItemCollectionMetrics' failed to satisfy constraint: Member must satisfy enum "
        "value set: [SIZE, NONE]",
    ):
        assert part in message
    assert message.count("; ") == 2


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "bad table!@#",
            "1 validation error detected: Value 'bad table!@#' at 'tableName' failed to satisfy constraint: "
            "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+",
        ),
        (
            "a" * 256,
            f"1 validation error detected: Value '{'a' * 256}' at 'tableName' failed to satisfy constraint: "
            "Member must have length less than or equal to 255",
        ),
        (
            "",
            "1 validation error detected: Value '' at 'tableName' failed to satisfy constraint: "
            "Member must have length greater than or equal to 1",
        ),
    ],
    ids=["pattern", "256 characters", "empty"],
)
def test_constraints__bad_table_name__dynamodb_words(client: Any, name: str, message: str) -> None:
    """Table names: 3 to 255 characters of [a-zA-Z0-9_.-] (API reference, TableName)."""
    assert refused(client.get_item, TableName=name, Key=_key()) == ("ValidationException", message)


def test_constraints__bad_table_name_and_bad_enum__only_the_table_name_reported(client: Any) -> None:
    """DynamoDB stops at a bad table name: `ReturnValues: INVALID` in the same request is not reported."""
    code, message = refused(client.put_item, TableName="", Item=_key(), ReturnValues="INVALID")
    assert code == "ValidationException"
    assert message.startswith("1 validation error detected: ") and "returnValues" not in message


def test_constraints__create_table_two_characters__minimum_length_3(client: Any) -> None:
    """ "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: Member must have
    length greater than or equal to 3"."""
    code, message = refused(
        client.create_table,
        TableName="ab",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    assert (code, message) == (
        "ValidationException",
        "1 validation error detected: Value 'ab' at 'tableName' failed to satisfy constraint: "
        "Member must have length greater than or equal to 3",
    )


def test_constraints__create_table_without_a_name__parameter_required(client: Any) -> None:
    """ "The parameter 'TableName' is required but was not present in the request"."""
    code, message = refused(
        client.create_table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
    )
    assert (code, message) == (
        "ValidationException",
        "The parameter 'TableName' is required but was not present in the request",
    )


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (
            "attribute type",
            {"AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "INVALID"}]},
            "1 validation error detected: Value 'INVALID' at 'attributeDefinitions.1.member.attributeType' failed to "
            "satisfy constraint: Member must satisfy enum value set: [B, N, S]",
        ),
        (
            "key type",
            {"KeySchema": [{"AttributeName": "PK", "KeyType": "INVALID"}]},
            "1 validation error detected: Value 'INVALID' at 'keySchema.1.member.keyType' failed to satisfy "
            "constraint: Member must satisfy enum value set: [HASH, RANGE]",
        ),
    ],
)
def test_constraints__create_table_bad_enum__member_path_and_dynamodb_order(
    client: Any, where: str, value: dict[str, Any], message: str
) -> None:
    """Enum values listed in DynamoDB's order, at the member's path (`keySchema.1.member.keyType`)."""
    request = {
        "TableName": "labkit-bad-enum",
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
        "BillingMode": "PAY_PER_REQUEST",
        **value,
    }
    assert refused(client.create_table, **request) == ("ValidationException", message)


def test_constraints__query_select_and_limit__dynamodb_words(client: Any, table: str) -> None:
    """Select: "[SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"; Query's Limit 0: "Value at
    'Limit' failed to satisfy constraint: Member must have value greater than or equal to 1"."""
    query = {
        "TableName": table,
        "KeyConditionExpression": "PK = :v",
        "ExpressionAttributeValues": {":v": {"S": "A"}},
    }
    assert refused(client.query, **query, Select="INVALID_VALUE") == (
        "ValidationException",
        "1 validation error detected: Value 'INVALID_VALUE' at 'select' failed to satisfy constraint: Member must "
        "satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]",
    )
    assert refused(client.query, **query, Limit=0) == (
        "ValidationException",
        "1 validation error detected: Value at 'Limit' failed to satisfy constraint: Member must have value greater "
        "than or equal to 1",
    )
    assert refused(client.scan, TableName=table, Limit=0) == (
        "ValidationException",
        "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value "
        "greater than or equal to 1",
    )


# --- tables that do not exist ------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["get_item", "put_item", "delete_item", "scan", "transact_write_items"])
def test_missing_table__resource_not_found_exception(client: Any, operation: str) -> None:
    """Data-plane requests on a table that does not exist: ResourceNotFoundException, "Requested resource not found"."""
    requests: dict[str, dict[str, Any]] = {
        "get_item": {"TableName": MISSING, "Key": _key()},
        "put_item": {"TableName": MISSING, "Item": _key()},
        "delete_item": {"TableName": MISSING, "Key": _key()},
        "scan": {"TableName": MISSING},
        "transact_write_items": {"TransactItems": [{"Put": {"TableName": MISSING, "Item": _key()}}]},
    }
    assert refused(getattr(client, operation), **requests[operation]) == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )


# --- parameters that do not go together ----------------------------------------------------------

MIXED: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "Expected + ConditionExpression": (
        "put_item",
        {"Item": _key(), "Expected": {"PK": {"Exists": False}}, "ConditionExpression": "attribute_not_exists(PK)"},
        "Expected",
        "ConditionExpression",
    ),
    "AttributeUpdates + UpdateExpression": (
        "update_item",
        {
            "Key": _key(),
            "AttributeUpdates": {"n": {"Action": "PUT", "Value": {"S": "v"}}},
            "UpdateExpression": "SET n = :v",
            "ExpressionAttributeValues": {":v": {"S": "v"}},
        },
        "AttributeUpdates",
        "UpdateExpression",
    ),
    "AttributesToGet + ProjectionExpression": (
        "get_item",
        {"Key": _key(), "AttributesToGet": ["n"], "ProjectionExpression": "n"},
        "AttributesToGet",
        "ProjectionExpression",
    ),
    "KeyConditions + KeyConditionExpression": (
        "query",
        {
            "KeyConditions": {"PK": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "A"}]}},
            "KeyConditionExpression": "PK = :v",
            "ExpressionAttributeValues": {":v": {"S": "A"}},
        },
        "KeyConditions",
        "KeyConditionExpression",
    ),
    "ScanFilter + FilterExpression": (
        "scan",
        {
            "ScanFilter": {"n": {"ComparisonOperator": "NOT_NULL"}},
            "FilterExpression": "attribute_exists(n)",
        },
        "ScanFilter",
        "FilterExpression",
    ),
}


@pytest.mark.parametrize("case", list(MIXED), ids=list(MIXED))
def test_mixing__legacy_and_expression_parameters__refused_naming_both(client: Any, table: str, case: str) -> None:
    """ "Can not use both expression and non-expression parameters in the same request: Non-expression parameters:
    {Expected} Expression parameters: {ConditionExpression}"."""
    method, params, legacy, expression = MIXED[case]
    assert refused(getattr(client, method), TableName=table, **params) == (
        "ValidationException",
        "Can not use both expression and non-expression parameters in the same request: "
        f"Non-expression parameters: {{{legacy}}} Expression parameters: {{{expression}}}",
    )
    assert scan_all(client, table) == []


def test_values_without_expressions__put_item__refused_naming_the_missing_expression(client: Any, table: str) -> None:
    """ "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null"
    (DynamoDB names the expressions a PutItem or DeleteItem takes)."""
    message = "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null"
    values = {":v": {"S": "unused"}}
    assert refused(client.put_item, TableName=table, Item=_key(), ExpressionAttributeValues=values) == (
        "ValidationException",
        message,
    )
    assert refused(client.delete_item, TableName=table, Key=_key(), ExpressionAttributeValues=values) == (
        "ValidationException",
        message,
    )
    assert scan_all(client, table) == []


def test_values_without_expressions__update_item__refused_naming_both_expressions(client: Any, table: str) -> None:
    """ "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and
    ConditionExpression are null" (DynamoDB's answer to an UpdateItem with values and no expression)."""
    assert refused(
        client.update_item, TableName=table, Key=_key(), ExpressionAttributeValues={":v": {"S": "unused"}}
    ) == (
        "ValidationException",
        "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and "
        "ConditionExpression are null",
    )
    assert scan_all(client, table) == []


def test_unused_name__query_refused(client: Any, table: str) -> None:
    """ "Value provided in ExpressionAttributeNames unused in expressions: keys: {#unused}"."""
    assert refused(
        client.query,
        TableName=table,
        KeyConditionExpression="PK = :v",
        ExpressionAttributeValues={":v": {"S": "A"}},
        ExpressionAttributeNames={"#unused": "x"},
    ) == ("ValidationException", "Value provided in ExpressionAttributeNames unused in expressions: keys: {#unused}")


# --- UpdateExpression --------------------------------------------------------------------------

UPDATES = {
    "INVALID SYNTAX HERE": 'Invalid UpdateExpression: Syntax error; token: "INVALID", near: "INVALID SYNTAX"',
    "SET n :v": 'Invalid UpdateExpression: Syntax error; token: ":v", near: "n :v"',
    "SET n = n + + :v": 'Invalid UpdateExpression: Syntax error; token: "+", near: "+ + :v"',
    "SET a = :v REMOVE": 'Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "REMOVE"',
    "SET n = :v SET m = :v": 'Invalid UpdateExpression: The "SET" section can only be used once in an update '
    "expression;",
    "SET n = foo(:v)": "Invalid UpdateExpression: Invalid function name; function: foo",
    "SET name = :v": "Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: name",
    "": "Invalid UpdateExpression: The expression can not be empty;",
}


@pytest.mark.parametrize("expression", list(UPDATES), ids=list(UPDATES))
def test_update_expression__syntax_error__token_and_near_as_dynamodb_words_them(
    client: Any, table: str, expression: str
) -> None:
    """A syntax error names the token and the text near it (`near: "INVALID SYNTAX"`), before anything else."""
    values = {"ExpressionAttributeValues": {":v": {"S": "x"}}} if ":v" in expression else {}
    assert refused(client.update_item, TableName=table, Key=_key(), UpdateExpression=expression, **values) == (
        "ValidationException",
        UPDATES[expression],
    )


@pytest.mark.parametrize("attribute", ["PK", "SK"])
def test_update_expression__key_attribute_refused(client: Any, table: str, attribute: str) -> None:
    """ "One or more parameter values were invalid: Cannot update attribute PK. This attribute is part of the key"."""
    assert refused(
        client.update_item,
        TableName=table,
        Key=_key(),
        UpdateExpression="SET #k = :v",
        ExpressionAttributeNames={"#k": attribute},
        ExpressionAttributeValues={":v": {"S": "x"}},
    ) == (
        "ValidationException",
        f"One or more parameter values were invalid: Cannot update attribute {attribute}. "
        "This attribute is part of the key",
    )


# --- Query and Scan ------------------------------------------------------------------------------


def test_query__consistent_read_on_a_gsi_refused(client: Any, table: str) -> None:
    """ "Consistent reads are not supported on global secondary indexes"."""
    assert refused(
        client.query,
        TableName=table,
        IndexName="email-index",
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": "a@x.io"}},
        ConsistentRead=True,
    ) == ("ValidationException", "Consistent reads are not supported on global secondary indexes")


@pytest.mark.parametrize(
    ("segments", "message"),
    [
        (
            {"Segment": 0},
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
            "present",
        ),
        (
            {"TotalSegments": 4},
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
            "present",
        ),
        (
            {"Segment": 5, "TotalSegments": 5},
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 5 is not "
            "less than TotalSegments: 5",
        ),
    ],
)
def test_scan__segments__dynamodb_words(client: Any, table: str, segments: dict[str, int], message: str) -> None:
    """Parallel scan: Segment and TotalSegments go together, Segment < TotalSegments."""
    assert refused(client.scan, TableName=table, **segments) == ("ValidationException", message)


# --- values and transactions ----------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "word"), [("SS", "string"), ("NS", "number")])
def test_empty_set__each_type__its_own_message(client: Any, table: str, kind: str, word: str) -> None:
    """ "One or more parameter values were invalid: An string set  may not be empty" (and number; the binary
    set's own words are in test_front_door.py)."""
    assert refused(client.put_item, TableName=table, Item={**_key(), "s": {kind: []}}) == (
        "ValidationException",
        f"One or more parameter values were invalid: An {word} set  may not be empty",
    )


def test_transaction__two_actions_on_one_item_refused(client: Any, table: str) -> None:
    """ "Transaction request cannot include multiple operations on one item"."""
    assert refused(
        client.transact_write_items,
        TransactItems=[
            {"Put": {"TableName": table, "Item": _key("T")}},
            {"Delete": {"TableName": table, "Key": _key("T")}},
        ],
    ) == ("ValidationException", "Transaction request cannot include multiple operations on one item")


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            {"Put": {"Item": {"PK": {"N": "5"}, "SK": {"S": "1"}}}},
            "One or more parameter values were invalid: Type mismatch for key PK expected: S actual: N",
        ),
        (
            {"Delete": {"Key": {"PK": {"N": "5"}, "SK": {"S": "1"}}}},
            "The provided key element does not match the schema",
        ),
    ],
    ids=["put", "delete"],
)
def test_transaction__key_of_the_wrong_type__cancelled_with_validation_error(
    client: Any, table: str, action: dict[str, Any], reason: str
) -> None:
    """A key of the wrong type in a transaction cancels it: TransactionCanceledException, reason code
    ValidationError, positional ("None" for the other actions)."""
    ((kind, body),) = action.items()
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": _key("ok")}},
                {kind: {"TableName": table, **body}},
            ]
        )
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert error["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError]"
    )
    assert error["CancellationReasons"] == [{"Code": "None"}, {"Code": "ValidationError", "Message": reason}]
    assert scan_all(client, table) == []


def test_query__filter_on_a_key_attribute_refused(client: Any, table: str) -> None:
    """ "Filter Expression can only contain non-primary key attributes: Primary key attribute: SK" (the key
    belongs in the KeyConditionExpression)."""
    assert refused(
        client.query,
        TableName=table,
        KeyConditionExpression="PK = :p",
        FilterExpression="SK = :s",
        ExpressionAttributeValues={":p": {"S": "A"}, ":s": {"S": "1"}},
    ) == (
        "ValidationException",
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: SK",
    )


def test_select_specific_attributes__with_and_without_a_projection(client: Any, table: str) -> None:
    """Select=SPECIFIC_ATTRIBUTES returns the projected attributes; without a projection it is refused."""
    client.put_item(TableName=table, Item={**_key("S"), "n": {"N": "1"}, "m": {"S": "x"}})
    query = {
        "TableName": table,
        "KeyConditionExpression": "PK = :p",
        "ExpressionAttributeValues": {":p": {"S": "S"}},
        "Select": "SPECIFIC_ATTRIBUTES",
    }
    assert client.query(**query, ProjectionExpression="n")["Items"] == [{"n": {"N": "1"}}]
    assert refused(client.query, **query) == (
        "ValidationException",
        "1 validation error detected: Must specify the AttributesToGet or ProjectionExpression when choosing to get "
        "SPECIFIC_ATTRIBUTES",
    )
    client.delete_item(TableName=table, Key=_key("S"))
