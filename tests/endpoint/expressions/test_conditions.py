"""Conditions, filters and projections: evaluated by the engine as DynamoDB evaluates them.

Rules from the DynamoDB Developer Guide, "Comparison operator and function reference"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.OperatorsAndFunctions.html)
and "Projection expressions"; messages as DynamoDB words them. Every request goes over HTTP
through boto3 (client-side validation off) to a real endpoint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.endpoint.clients import refused
from tests.endpoint.tables import make_table, scan_all

ITEM = {
    "PK": {"S": "P"},
    "SK": {"S": "full"},
    "s": {"S": "héllo"},
    "n": {"N": "10"},
    "b": {"B": b"\x00\x01\x02"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x00", b"\xff"]},
    "l": {"L": [{"S": "x"}, {"N": "1"}]},
    "m": {"M": {"x": {"S": "a"}, "y": {"M": {"z": {"N": "3"}}}}},
    "t": {"BOOL": True},
    "z": {"NULL": True},
}
BARE = {"PK": {"S": "P"}, "SK": {"S": "bare"}}


@pytest.fixture(scope="module")
def table(client: Any) -> Iterator[str]:
    name = make_table(client)
    client.put_item(TableName=name, Item=ITEM)
    client.put_item(TableName=name, Item=BARE)
    yield name
    client.delete_table(TableName=name)


def _query(client: Any, table: str, expression: str, **values: Any) -> list[str]:
    """The sort keys a Query filter keeps (of `full` and `bare`)."""
    params: dict[str, Any] = {":pk": {"S": "P"}, **{f":{k}": v for k, v in values.items()}}
    answer = client.query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        FilterExpression=expression,
        ExpressionAttributeValues=params,
    )
    return sorted(item["SK"]["S"] for item in answer["Items"])


# --- size() and begins_with on binary values (the 500 of issue 20) --------------------------------


def test_query_filter__size_of_a_binary_attribute__its_byte_count_and_no_500(client: Any, table: str) -> None:
    """size(path) of a Binary is its number of bytes; an item without the attribute does not match
    (it was an HTTP 500: moto raises ValueError for an item that lacks the attribute)."""
    assert _query(client, table, "size(b) = :three", three={"N": "3"}) == ["full"]
    assert _query(client, table, "size(b) > :zero", zero={"N": "0"}) == ["full"]


def test_filter__size_of_number_bool_null__no_size_so_false(client: Any, table: str) -> None:
    """size() is defined for String, Binary, sets, List and Map only; on other types the comparison is false."""
    for attribute in ("n", "t", "z"):
        assert _query(client, table, f"size({attribute}) >= :zero", zero={"N": "0"}) == []
        assert _query(client, table, f"NOT (size({attribute}) >= :zero)", zero={"N": "0"}) == ["bare", "full"]


def test_filter__size_of_string_set_list_map__characters_or_elements(client: Any, table: str) -> None:
    """size(): characters of a String; elements of a set, List or Map."""
    assert _query(client, table, "size(s) = :five", five={"N": "5"}) == ["full"]
    assert _query(client, table, "size(ss) = :two AND size(l) = :two AND size(m) = :two", two={"N": "2"}) == ["full"]


def test_filter__begins_with_on_binary__binary_prefix_matches(client: Any, table: str) -> None:
    """begins_with(path, substr): a Binary attribute with a Binary prefix; a String prefix never matches it."""
    assert _query(client, table, "begins_with(b, :p)", p={"B": b"\x00\x01"}) == ["full"]
    assert _query(client, table, "begins_with(b, :p)", p={"B": b"\x01"}) == []
    assert _query(client, table, "begins_with(b, :p)", p={"S": "A"}) == []


def test_condition__size_of_binary_in_a_put_condition__evaluated_not_500(client: Any, table: str) -> None:
    """The same functions in a ConditionExpression: `size(b) > :n` on an item without `b` fails the condition."""
    code, message = refused(
        client.put_item,
        TableName=table,
        Item=BARE,
        ConditionExpression="size(b) > :n",
        ExpressionAttributeValues={":n": {"N": "1"}},
    )
    assert (code, message) == ("ConditionalCheckFailedException", "The conditional request failed")


# --- comparisons ----------------------------------------------------------------------------------


def test_filter__numbers_compare_numerically(client: Any, table: str) -> None:
    """Numbers compare as numbers: 10 > 9 (as strings "10" < "9"), and 10 = 1E1 = 10.000."""
    assert _query(client, table, "n > :nine", nine={"N": "9"}) == ["full"]
    assert _query(client, table, "n = :ten", ten={"N": "1E1"}) == ["full"]
    assert _query(client, table, "n BETWEEN :a AND :b", a={"N": "9.5"}, b={"N": "10.000"}) == ["full"]


def test_filter__not_equal_on_a_missing_attribute__true_other_comparisons_false(client: Any, table: str) -> None:
    """A missing attribute is not equal to anything (`<>` true); `=`, `<`, BETWEEN and IN are false."""
    assert _query(client, table, "n <> :one", one={"N": "1"}) == ["bare", "full"]
    assert _query(client, table, "n < :big", big={"N": "100"}) == ["full"]
    assert _query(client, table, "n IN (:ten, :one)", ten={"N": "10"}, one={"N": "1"}) == ["full"]


def test_filter__different_types__never_equal_never_ordered(client: Any, table: str) -> None:
    """{"S":"10"} does not equal {"N":"10"}; `<` between a String and a Number is false."""
    assert _query(client, table, "n = :ten", ten={"S": "10"}) == []
    assert _query(client, table, "s < :n", n={"N": "1"}) == []


def test_filter__contains__substring_set_element_list_element_binary(client: Any, table: str) -> None:
    """contains(path, operand): a substring of a String, an element of a set or a List, bytes inside a Binary."""
    assert _query(client, table, "contains(s, :v)", v={"S": "éll"}) == ["full"]
    assert _query(client, table, "contains(ns, :v)", v={"N": "2.50"}) == ["full"]
    assert _query(client, table, "contains(l, :v)", v={"N": "1"}) == ["full"]
    assert _query(client, table, "contains(b, :v)", v={"B": b"\x01\x02"}) == ["full"]
    assert _query(client, table, "contains(ss, :v)", v={"S": "c"}) == []


def test_filter__attribute_type__each_type_name(client: Any, table: str) -> None:
    """attribute_type(path, type): true when the attribute is of that type (S, N, B, SS, NS, BS, L, M, BOOL, NULL)."""
    for attribute, kind in {"s": "S", "b": "B", "bs": "BS", "m": "M", "t": "BOOL", "z": "NULL"}.items():
        assert _query(client, table, f"attribute_type({attribute}, :t)", t={"S": kind}) == ["full"]
    assert _query(client, table, "attribute_type(n, :t)", t={"S": "S"}) == []


def test_filter__nested_paths__map_member_and_list_element(client: Any, table: str) -> None:
    """Document paths reach into maps (`m.y.z`) and lists (`l[1]`); a path past the end is missing."""
    assert _query(client, table, "m.y.z = :three", three={"N": "3"}) == ["full"]
    assert _query(client, table, "l[1] = :one", one={"N": "1"}) == ["full"]
    assert _query(client, table, "attribute_not_exists(l[5])") == ["bare", "full"]


# --- placeholders, reserved words, parentheses ---------------------------------------------------


def test_placeholder__name_used_only_in_a_list_index_path__counted_as_used(client: Any, table: str) -> None:
    """`#l[0]` uses `#l`: no "Value provided in ExpressionAttributeNames unused in expressions"."""
    got = client.get_item(
        TableName=table,
        Key={"PK": {"S": "P"}, "SK": {"S": "full"}},
        ProjectionExpression="#l[0]",
        ExpressionAttributeNames={"#l": "l"},
    )
    assert got["Item"] == {"l": {"L": [{"S": "x"}]}}
    answer = client.scan(
        TableName=table,
        FilterExpression="#l[0] = :x",
        ExpressionAttributeNames={"#l": "l"},
        ExpressionAttributeValues={":x": {"S": "x"}},
    )
    assert [item["SK"] for item in answer["Items"]] == [{"S": "full"}]


@pytest.mark.parametrize(
    ("parameter", "expression"),
    [("FilterExpression", "name = :v"), ("ConditionExpression", "attribute_exists(status)")],
)
def test_reserved_word__as_attribute_name__validation_exception(
    client: Any, table: str, parameter: str, expression: str
) -> None:
    """Reserved words (DynamoDB Developer Guide, "Reserved words in DynamoDB") cannot name attributes in an
    expression: "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: name"."""
    word = "name" if "name" in expression else "status"
    values = {"ExpressionAttributeValues": {":v": {"S": "x"}}} if ":v" in expression else {}
    call = client.scan if parameter == "FilterExpression" else client.put_item
    extra = {} if parameter == "FilterExpression" else {"Item": BARE}
    code, message = refused(call, TableName=table, **{parameter: expression}, **values, **extra)
    assert (code, message) == (
        "ValidationException",
        f"Invalid {parameter}: Attribute name is a reserved keyword; reserved keyword: {word}",
    )


def test_reserved_word__behind_a_placeholder__accepted(client: Any, table: str) -> None:
    """ "define an expression attribute name to use in the place of the reserved word" (#name)."""
    answer = client.scan(
        TableName=table,
        FilterExpression="#name = :v",
        ExpressionAttributeNames={"#name": "s"},
        ExpressionAttributeValues={":v": {"S": "héllo"}},
    )
    assert answer["Count"] == 1


def test_condition__redundant_parentheses__validation_exception(client: Any, table: str) -> None:
    """ "Invalid ConditionExpression: The expression has redundant parentheses;" for ((attribute_not_exists(PK)))."""
    code, message = refused(
        client.put_item, TableName=table, Item=BARE, ConditionExpression="((attribute_not_exists(PK)))"
    )
    assert (code, message) == (
        "ValidationException",
        "Invalid ConditionExpression: The expression has redundant parentheses;",
    )
    assert len(scan_all(client, table)) == 2


# --- projections -----------------------------------------------------------------------------------


def test_projection__nested_paths__only_those_members_in_index_order(client: Any, table: str) -> None:
    """A ProjectionExpression returns the named attributes; `m.y.z` keeps the path's maps, and list elements
    come back in index order whatever order they were named in."""
    got = client.get_item(
        TableName=table,
        Key={"PK": {"S": "P"}, "SK": {"S": "full"}},
        ProjectionExpression="m.y.z, l[1], l[0], nope",
    )
    assert got["Item"] == {
        "m": {"M": {"y": {"M": {"z": {"N": "3"}}}}},
        "l": {"L": [{"S": "x"}, {"N": "1"}]},
    }


def test_projection__query_and_scan__applied_after_the_filter(client: Any, table: str) -> None:
    """The filter sees the whole item; the projection only shapes what is returned."""
    answer = client.query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        FilterExpression="n = :ten",
        ProjectionExpression="s",
        ExpressionAttributeValues={":pk": {"S": "P"}, ":ten": {"N": "10"}},
    )
    assert answer["Items"] == [{"s": {"S": "héllo"}}]


# --- checks once the placeholders are known --------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "values", "message"),
    [
        (
            "n < :v",
            {":v": {"BOOL": True}},
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator or function: <, "
            "operand type: BOOL",
        ),
        (
            "begins_with(s, :v)",
            {":v": {"N": "1"}},
            "Invalid FilterExpression: Incorrect operand type for operator or function; operator or function: "
            "begins_with, operand type: N",
        ),
        (
            "contains(#a, #a)",
            {},
            "Invalid FilterExpression: The first operand must be distinct from the remaining operands for this "
            "operator or function; operator: contains, first operand: [s]",
        ),
    ],
    ids=["< on BOOL", "begins_with a number", "contains(#a, #a)"],
)
def test_filter__operand_mistakes__refused_before_reading(
    client: Any, table: str, expression: str, values: dict[str, Any], message: str
) -> None:
    """Ordering operators take numbers, strings or binaries; begins_with a string or binary; a function's
    operands must be distinct paths — each refused in DynamoDB's words, before any item is read."""
    extra: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
    if "#a" in expression:
        extra["ExpressionAttributeNames"] = {"#a": "s"}
    assert refused(client.scan, TableName=table, FilterExpression=expression, **extra) == (
        "ValidationException",
        message,
    )
