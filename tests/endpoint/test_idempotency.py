"""ClientRequestToken: scoped by account and region, remembered 10 minutes, memory bounded."""

from __future__ import annotations

from typing import Any

from labkit.endpoint import EmbeddedEndpoint
from labkit.endpoint.idempotency import TokenMemory
from tests.endpoint.conftest import make_table, raw_client


def _put(client: Any, table: str, token: str) -> None:
    client.transact_write_items(
        TransactItems=[{"Put": {"TableName": table, "Item": {"PK": {"S": "T"}, "SK": {"S": "A"}}}}],
        ClientRequestToken=token,
    )


def test_token__replayed_in_another_region__applies_there(endpoint: EmbeddedEndpoint) -> None:
    """A token names a request in one account and region: the same token elsewhere is a new request."""
    east, west = raw_client(endpoint.url, "us-east-1"), raw_client(endpoint.url, "eu-west-1")
    table = make_table(east)
    west.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
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
