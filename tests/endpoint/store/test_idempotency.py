"""ClientRequestToken: a repeated TransactWriteItems applies once and reports read units; a
different request with the same token is IdempotentParameterMismatchException; tokens are scoped
by account and region, remembered 10 minutes (on this module's fake clock), memory bounded."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import build_engine, start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.endpoint.store.idempotency import TokenMemory
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.table import table_spec
from tests.endpoint.clients import engine_headers, error_code, raw_client
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.tables import key, make_table


@pytest.fixture(scope="module")
def endpoint(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    """This module's endpoint runs on its fake clock: a token ages only when a test moves the clock."""
    with start_endpoint(clock=clock) as ep:
        yield ep


def _increment(lab: Connection, token: str, amount: str = "1", **extra: Any) -> dict[str, Any]:
    return lab.client.transact_write_items(  # type: ignore[return-value]
        TransactItems=[
            {
                "Update": {
                    "TableName": lab.table_name,
                    "Key": key("COUNTER"),
                    "UpdateExpression": "ADD n :d",
                    "ExpressionAttributeValues": {":d": {"N": amount}},
                }
            }
        ],
        ClientRequestToken=token,
        **extra,
    )


def _counter(lab: Connection) -> int:
    item = lab.client.get_item(TableName=lab.table_name, Key=key("COUNTER"), ConsistentRead=True)
    return int(item["Item"]["n"]["N"])


def test_client_request_token__repeated_within_ttl__succeeds_and_applies_once(
    lab: Connection,
) -> None:
    """The same TransactWriteItems with the same token is applied once, and both calls succeed."""
    first = _increment(lab, "token-once")
    again = _increment(lab, "token-once")
    assert first["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert again["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert _counter(lab) == 1


def test_client_request_token__repeated__reports_read_units_not_write_units(
    lab: Connection,
) -> None:
    """As DynamoDB documents: the repeat reports the read units of reading the item."""
    first = _increment(lab, "token-units", ReturnConsumedCapacity="TOTAL")
    again = _increment(lab, "token-units", ReturnConsumedCapacity="TOTAL")
    assert first["ConsumedCapacity"][0]["WriteCapacityUnits"] == 2.0
    assert again["ConsumedCapacity"] == [{"TableName": lab.table_name, "CapacityUnits": 1.0, "ReadCapacityUnits": 1.0}]


def test_client_request_token__same_token_different_request__idempotent_parameter_mismatch(
    lab: Connection,
) -> None:
    """Reusing a token for a different request fails with HTTP 400 and changes nothing."""
    _increment(lab, "token-mismatch")
    with pytest.raises(ClientError) as caught:
        _increment(lab, "token-mismatch", amount="5")
    assert error_code(caught.value) == "IdempotentParameterMismatchException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert _counter(lab) == 1


def test_client_request_token__after_ttl__is_a_new_request(lab: Connection, clock: FakeClock) -> None:
    """After 10 minutes (by the engine's clock) the same token applies again."""
    _increment(lab, "token-expiry")
    clock.now += C.CLIENT_REQUEST_TOKEN_TTL_SECONDS - 1
    _increment(lab, "token-expiry")
    assert _counter(lab) == 1
    clock.now += 1
    _increment(lab, "token-expiry")
    assert _counter(lab) == 2


def test_client_request_token__mismatch_error__has_dynamodb_json_shape() -> None:
    """The error body is DynamoDB's: namespaced __type and a lower-case message."""
    engine = build_engine()
    headers = engine_headers("TransactWriteItems")
    name = f"labkit-raw-{uuid.uuid4().hex[:8]}"
    engine.handle(engine_headers("CreateTable"), json.dumps(table_spec(name)).encode())
    put = {"Put": {"TableName": name, "Item": key("X")}}
    first = {"TransactItems": [put], "ClientRequestToken": "raw-token"}
    other = {
        "TransactItems": [put, {"Put": {"TableName": name, "Item": key("Y")}}],
        "ClientRequestToken": "raw-token",
    }
    assert engine.handle(headers, json.dumps(first).encode())[0] == 200
    status, _, body = engine.handle(headers, json.dumps(other).encode())
    payload = json.loads(body)
    assert status == 400
    assert payload["__type"] == "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"
    assert "new token" in payload["message"]


def _put(client: Any, table: str, token: str) -> None:
    client.transact_write_items(
        TransactItems=[{"Put": {"TableName": table, "Item": {"PK": {"S": "T"}, "SK": {"S": "A"}}}}],
        ClientRequestToken=token,
    )


def test_token__replayed_in_another_region__applies_there(endpoint: EmbeddedEndpoint) -> None:
    """A token names a request in one account and region: the same token elsewhere is a new request."""
    east, west = raw_client(endpoint.url, "us-east-1"), raw_client(endpoint.url, "eu-west-1")
    table = make_table(east)
    west.create_table(**table_spec(table))
    _put(east, table, "token-shared-by-regions")
    _put(west, table, "token-shared-by-regions")
    key = {"PK": {"S": "T"}, "SK": {"S": "A"}}
    assert "Item" in east.get_item(TableName=table, Key=key)
    assert "Item" in west.get_item(TableName=table, Key=key)


def test_token_memory__over_capacity__forgets_the_oldest_first() -> None:
    memory = TokenMemory(lambda: 0.0, capacity=3)
    for i in range(5):
        memory.remember(("acct", "us-east-1", f"t{i}"), "print", ())
    assert len(memory) == 3
    assert memory.recall(("acct", "us-east-1", "t0")) is None
    assert memory.recall(("acct", "us-east-1", "t4")) is not None


def test_token_memory__same_token_other_account__not_recalled() -> None:
    memory = TokenMemory(lambda: 0.0)
    memory.remember(("111111111111", "us-east-1", "t"), "print", ())
    assert memory.recall(("222222222222", "us-east-1", "t")) is None
    assert memory.recall(("111111111111", "us-east-1", "t")) is not None
