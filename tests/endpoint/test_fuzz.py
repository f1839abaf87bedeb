"""Fuzz: malformed and type-confused requests never get a 500, and an error never changes the table.

Property-based (hypothesis), bounded and reproducible: the ``labkit-ci`` profile has a fixed
number of examples and ``derandomize=True``, so a failure in CI replays locally. Requests go
both as raw HTTP (anything at all) and through boto3 with its parameter validation off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError
from hypothesis import given
from hypothesis import strategies as st

from labkit.endpoint import EmbeddedEndpoint
from tests.endpoint.clients import post, raw_client
from tests.endpoint.fuzz_settings import FUZZ, FUZZ_EXAMPLES
from tests.endpoint.tables import make_table, scan_all

CI = FUZZ
TABLE = "labkit-fuzz-table"  # replaced by the module's real table name when sent


@pytest.fixture(scope="module")
def world(endpoint: EmbeddedEndpoint) -> tuple[Any, str]:
    client = raw_client(endpoint.url)
    table = make_table(client, gsi=True)
    for pk in ("a", "b"):
        client.put_item(
            TableName=table,
            Item={"PK": {"S": pk}, "SK": {"S": "A"}, "n": {"N": "1"}, "email": {"S": f"{pk}@x.io"}},
        )
    return client, table


# --- strategies --------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=16) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
numbers = st.sampled_from(
    ["1", "1.0", "-0", "0", "1E+126", "1E-131", "1" * 39, "x", "", " 1", "1e5", "NaN", "Infinity"]
)
binaries = st.sampled_from(["AA==", "AQ==", "", "!!", "A"])
scalars = st.one_of(
    st.builds(lambda s: {"S": s}, st.text(max_size=4)),
    st.builds(lambda n: {"N": n}, numbers),
    st.builds(lambda b: {"B": b}, binaries),
    st.builds(lambda v: {"BOOL": v}, st.booleans() | json_values),
    st.builds(lambda v: {"NULL": v}, st.just(True) | json_values),
    st.builds(lambda v: {"SS": v}, st.lists(st.sampled_from(["a", "b", "a"]), max_size=3)),
    st.builds(lambda v: {"NS": v}, st.lists(numbers, max_size=3)),
    st.builds(lambda v: {"BS": v}, st.lists(binaries, max_size=2)),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["S", "N", "X", "L", "M"]), json_values),
    st.just({}),
    st.just({"S": "a", "N": "1"}),
    json_values,
)
attribute_values = st.recursive(
    scalars,
    lambda inner: (
        st.builds(lambda v: {"L": v}, st.lists(inner, max_size=2))
        | st.builds(lambda v: {"M": v}, st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2))
    ),
    max_leaves=4,
)
attribute_names = st.sampled_from(["PK", "SK", "n", "email", "s", ""])
keys = st.dictionaries(st.sampled_from(["PK", "SK", "x"]), attribute_values, max_size=3) | st.just(
    {"PK": {"S": "a"}, "SK": {"S": "A"}}
)
items = st.builds(
    lambda base, extra: {**base, **extra},
    st.sampled_from([{"PK": {"S": "a"}, "SK": {"S": "A"}}, {"PK": {"S": "z"}, "SK": {"S": "Z"}}, {}]),
    st.dictionaries(attribute_names, attribute_values, max_size=3),
)
_TOKENS = [
    "PK",
    "SK",
    "n",
    "email",
    "#n",
    "#x",
    ":v",
    ":w",
    "=",
    "<>",
    "<",
    ">=",
    "(",
    ")",
    ",",
    "AND",
    "OR",
    "NOT",
    "BETWEEN",
    "IN",
    "attribute_exists",
    "attribute_not_exists",
    "attribute_type",
    "begins_with",
    "size",
    "contains",
    "foo",
    ".",
    "[",
    "0",
    "]",
    "SET",
    "ADD",
    "REMOVE",
    "DELETE",
    "+",
    "-",
    "if_not_exists",
    "list_append",
    "@",
]
expressions = st.lists(st.sampled_from(_TOKENS), max_size=7).map(" ".join) | st.sampled_from(
    ["PK = :v", "attribute_exists(PK)", "SET n = n + :v", "ADD n :v", "n > :v", "begins_with(SK, :v)", "#n = :v"]
)
expression_names = st.dictionaries(
    st.sampled_from(["#n", "#x", "n"]), st.sampled_from(["n", "PK", "email"]) | json_values, max_size=2
)
expression_values = st.dictionaries(st.sampled_from([":v", ":w", "v"]), attribute_values, max_size=2)
table_names = st.sampled_from([TABLE, TABLE, TABLE, "labkit-no-such-table", ""]) | json_values
expression_parts = {
    "ExpressionAttributeNames": expression_names | json_values,
    "ExpressionAttributeValues": expression_values | json_values,
    "ReturnConsumedCapacity": st.sampled_from(["TOTAL", "INDEXES", "NONE", "SOME"]),
}


def _op(required: dict[str, Any], **optional: Any) -> Any:
    return st.fixed_dictionaries(required, optional={**expression_parts, **optional})


put_body = _op({"TableName": table_names, "Item": items | json_values}, ConditionExpression=expressions)
update_body = _op(
    {"TableName": table_names, "Key": keys | json_values, "UpdateExpression": expressions},
    ConditionExpression=expressions,
)
key_body = _op({"TableName": table_names, "Key": keys | json_values}, ConditionExpression=expressions)
requests = st.one_of(
    st.tuples(
        st.just("GetItem"),
        _op(
            {"TableName": table_names, "Key": keys},
            ProjectionExpression=expressions,
            ConsistentRead=st.booleans() | json_values,
        ),
    ),
    st.tuples(st.just("PutItem"), put_body),
    st.tuples(st.just("UpdateItem"), update_body),
    st.tuples(st.just("DeleteItem"), key_body),
    st.tuples(
        st.just("Query"),
        _op(
            {"TableName": table_names},
            KeyConditionExpression=expressions,
            FilterExpression=expressions,
            IndexName=st.sampled_from(["email-index", "nope"]),
            ExclusiveStartKey=keys,
            Limit=st.integers(-1, 3),
        ),
    ),
    st.tuples(
        st.just("Scan"),
        _op(
            {"TableName": table_names},
            FilterExpression=expressions,
            ProjectionExpression=expressions,
            Segment=st.integers(-1, 3),
            TotalSegments=st.integers(-1, 3),
            ExclusiveStartKey=keys,
        ),
    ),
    st.tuples(
        st.just("TransactWriteItems"),
        st.fixed_dictionaries(
            {
                "TransactItems": st.lists(
                    st.one_of(
                        st.builds(lambda b: {"Put": b}, put_body),
                        st.builds(lambda b: {"Update": b}, update_body),
                        st.builds(lambda b: {"Delete": b}, key_body),
                        st.builds(lambda b: {"ConditionCheck": b}, key_body),
                        st.dictionaries(st.sampled_from(["Put", "Delete", "Bogus"]), json_values, max_size=2),
                    ),
                    max_size=3,
                )
            },
            optional={"ClientRequestToken": st.text(max_size=40) | json_values},
        ),
    ),
    st.tuples(
        st.just("TransactGetItems"),
        st.fixed_dictionaries(
            {
                "TransactItems": st.lists(
                    st.builds(lambda b: {"Get": b}, _op({"TableName": table_names, "Key": keys})), max_size=3
                )
            }
        ),
    ),
    st.tuples(
        st.just("BatchGetItem"),
        st.fixed_dictionaries(
            {
                "RequestItems": st.dictionaries(
                    table_names.filter(lambda t: isinstance(t, str)),
                    st.fixed_dictionaries(
                        {"Keys": st.lists(keys, max_size=3)}, optional={"ProjectionExpression": expressions}
                    ),
                    max_size=2,
                )
            }
        ),
    ),
    st.tuples(
        st.just("BatchWriteItem"),
        st.fixed_dictionaries(
            {
                "RequestItems": st.dictionaries(
                    table_names.filter(lambda t: isinstance(t, str)),
                    st.lists(
                        st.builds(lambda i: {"PutRequest": {"Item": i}}, items)
                        | st.builds(lambda k: {"DeleteRequest": {"Key": k}}, keys)
                        | json_values,
                        max_size=3,
                    ),
                    max_size=2,
                )
            }
        ),
    ),
    st.tuples(
        st.sampled_from(["GetItem", "PutItem", "Query", "TransactWriteItems", "CreateTable", "UpdateTable"]),
        st.dictionaries(
            st.sampled_from(["TableName", "Key", "Item", "TransactItems", "KeySchema"]), json_values, max_size=3
        ),
    ),
)


def _real(value: Any, table: str) -> Any:
    """The request with the placeholder table name replaced by the module's table."""
    return json.loads(json.dumps(value).replace(TABLE, table))


def _check(client: Any, table: str, status: int, before: list[dict[str, Any]], sent: Any) -> None:
    assert status != 500, f"500 for {sent}"
    if status >= 400:
        assert scan_all(client, table) == before, f"an error ({status}) changed the table: {sent}"


@CI
@given(request=requests)
def test_fuzz__raw_http__never_500_and_errors_write_nothing(
    endpoint: EmbeddedEndpoint, world: tuple[Any, str], request: tuple[str, Any]
) -> None:
    client, table = world
    operation, params = request
    body = json.dumps(_real(params, table)).encode()
    before = scan_all(client, table)
    status, _ = post(endpoint.url, f"DynamoDB_20120810.{operation}", body)
    _check(client, table, status, before, body)


@CI
@given(request=requests)
def test_fuzz__boto3_without_parameter_validation__never_500_and_errors_write_nothing(
    world: tuple[Any, str], request: tuple[str, Any]
) -> None:
    client, table = world
    operation, params = request
    params = _real(params, table)
    method = getattr(client, "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_"))
    before = scan_all(client, table)
    try:
        method(**params) if isinstance(params, dict) else method()
        status = 200
    except ClientError as exc:
        status = int(exc.response["ResponseMetadata"]["HTTPStatusCode"])
    except (BotoCoreError, TypeError, ValueError, AttributeError, KeyError):
        return  # boto3 could not even serialise it: nothing was sent
    _check(client, table, status, before, params)


def test_fuzz__profile_is_reproducible() -> None:
    """The CI profile is derandomized with a fixed example count (so CI failures replay locally)."""
    assert CI.derandomize is True
    assert CI.max_examples == FUZZ_EXAMPLES
