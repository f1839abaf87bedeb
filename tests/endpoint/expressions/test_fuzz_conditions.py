"""Fuzz: filter and condition expressions with functions, on attributes of every type, never get a 500.

Well-formed expressions (and some that are not) built from DynamoDB's grammar: comparisons,
BETWEEN, IN, attribute_exists, attribute_not_exists, attribute_type, begins_with, contains and
size(), joined by AND, OR, NOT and parentheses, over attributes of type S, N, B, SS, NS, BS, L,
M, BOOL and NULL (and paths into lists and maps, and missing ones), against values of every
type. They go as a Query or Scan FilterExpression and as the ConditionExpression of PutItem,
UpdateItem, DeleteItem and a transaction's ConditionCheck. A ``size()`` on a binary attribute in a
Query filter once answered HTTP 500 (issue 20): that is where this fuzz looks. Bounded and
reproducible: the ``labkit-ci`` profile (tests/endpoint/fuzz_settings.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from labkit.endpoint import EmbeddedEndpoint
from tests.endpoint.clients import raw_client
from tests.endpoint.fuzz_settings import FUZZ
from tests.endpoint.tables import make_table, scan_all

#: One attribute of each type DynamoDB has (boto3 sends binary as base64 for us).
TYPED = {
    "s": {"S": "abc"},
    "n": {"N": "5"},
    "b": {"B": b"\x00ab"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x00", b"ab"]},
    "l": {"L": [{"S": "a"}, {"N": "1"}, {"B": b"a"}]},
    "m": {"M": {"x": {"S": "a"}, "y": {"N": "1"}}},
    "t": {"BOOL": True},
    "z": {"NULL": True},
}
#: A value of each type, plus attribute_type's type names (one of them invalid).
VALUES: dict[str, Any] = {f":{name}": value for name, value in TYPED.items()} | {
    ":n0": {"N": "0"},
    ":s0": {"S": ""},
    ":tS": {"S": "S"},
    ":tB": {"S": "B"},
    ":tNS": {"S": "NS"},
    ":tX": {"S": "X"},
}
PATHS = [*TYPED, "l[0]", "l[2]", "l[9]", "m.x", "m.y", "m.nope", "nope", "#s", "#b"]
NAMES = {"#s": "s", "#b": "b"}

paths = st.sampled_from(PATHS)
values = st.sampled_from(sorted(VALUES))
operands = paths | values | paths.map(lambda p: f"size({p})")
comparators = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
atoms = st.one_of(
    st.builds(lambda a, op, b: f"{a} {op} {b}", operands, comparators, operands),
    st.builds(lambda a, b, c: f"{a} BETWEEN {b} AND {c}", operands, operands, operands),
    st.builds(lambda a, xs: f"{a} IN ({', '.join(xs)})", operands, st.lists(operands, min_size=1, max_size=3)),
    st.builds(lambda p: f"attribute_exists({p})", paths),
    st.builds(lambda p: f"attribute_not_exists({p})", paths),
    st.builds(lambda p, t: f"attribute_type({p}, {t})", paths, values),
    st.builds(lambda p, v: f"begins_with({p}, {v})", paths, values),
    st.builds(lambda p, v: f"contains({p}, {v})", paths, operands),
)
conditions = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} AND {b}", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=4,
)
kinds = st.sampled_from(["Query", "Scan", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheck"])


@pytest.fixture(scope="module")
def world(endpoint: EmbeddedEndpoint) -> tuple[Any, str]:
    """A table holding one item with every type, and one with none of them."""
    client = raw_client(endpoint.url)
    table = make_table(client)
    client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "full"}, **TYPED})
    client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "bare"}})
    return client, table


def _placeholders(expression: str) -> dict[str, Any]:
    """ExpressionAttributeNames/Values for exactly the placeholders the expression uses."""
    out: dict[str, Any] = {}
    used_values = {v: VALUES[v] for v in re.findall(r":[A-Za-z0-9]+", expression) if v in VALUES}
    used_names = {n: NAMES[n] for n in re.findall(r"#[a-z]+", expression)}
    if used_values:
        out["ExpressionAttributeValues"] = used_values
    if used_names:
        out["ExpressionAttributeNames"] = used_names
    return out


def _send(client: Any, table: str, kind: str, expression: str) -> None:
    full = {"PK": {"S": "a"}, "SK": {"S": "full"}}
    extra = _placeholders(expression)
    if kind == "Query":
        values = {**extra.get("ExpressionAttributeValues", {}), ":pk": {"S": "a"}}
        client.query(
            TableName=table,
            KeyConditionExpression="PK = :pk",
            FilterExpression=expression,
            **{**extra, "ExpressionAttributeValues": values},
        )
    elif kind == "Scan":
        client.scan(TableName=table, FilterExpression=expression, **extra)
    elif kind == "PutItem":  # writes the item as it is: the table stays the same either way
        client.put_item(TableName=table, Item={**full, **TYPED}, ConditionExpression=expression, **extra)
    elif kind == "UpdateItem":
        client.update_item(
            TableName=table, Key=full, UpdateExpression="REMOVE ghost", ConditionExpression=expression, **extra
        )
    elif kind == "DeleteItem":  # of an item that is not there
        key = {"PK": {"S": "a"}, "SK": {"S": "ghost"}}
        client.delete_item(TableName=table, Key=key, ConditionExpression=expression, **extra)
    else:
        check = {"TableName": table, "Key": full, "ConditionExpression": expression, **extra}
        client.transact_write_items(TransactItems=[{"ConditionCheck": check}])


@FUZZ
@given(kind=kinds, expression=conditions)
def test_fuzz__filters_and_conditions_on_every_type__never_500_and_the_table_unchanged(
    world: tuple[Any, str], kind: str, expression: str
) -> None:
    """Every answer is a 200 or a 4xx (ValidationException, ConditionalCheckFailedException,
    TransactionCanceledException); none of these requests changes the table."""
    client, table = world
    before = scan_all(client, table)
    try:
        _send(client, table, kind, expression)
    except ClientError as exc:
        status = int(exc.response["ResponseMetadata"]["HTTPStatusCode"])
        assert status < 500, f"{status} for {kind} {expression!r}: {exc.response['Error']}"
        assert exc.response["Error"]["Code"] in (
            "ValidationException",
            "ConditionalCheckFailedException",
            "TransactionCanceledException",
        ), (kind, expression, exc.response["Error"])
    assert scan_all(client, table) == before, f"{kind} {expression!r} changed the table"
