"""TransactGetItems' own rules, in DynamoDB's words (API reference: TransactGetItems; the answers quoted
were recorded against DynamoDB): a Get whose key does not match its table cancels the transaction
(reason ``ValidationError``), and one item may not be read twice."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.endpoint.clients import refused
from tests.endpoint.tables import make_table


@pytest.fixture(scope="module")
def table(client: Any) -> str:
    return make_table(client, range_key=False)


@pytest.mark.parametrize(
    "key", [{}, {"other": {"S": "x"}}, {"PK": {"N": "1"}}], ids=["empty", "wrong-name", "wrong-type"]
)
def test_get_with_a_key_not_matching_the_schema__transaction_cancelled_with_validation_error(
    client: Any, table: str, key: dict[str, Any]
) -> None:
    """A per-action validation error "surfaces as TransactionCanceledException": "Transaction cancelled, please
    refer cancellation reasons for specific reasons [None, ValidationError]", the reason on the bad Get."""
    items = [{"Get": {"TableName": table, "Key": {"PK": {"S": "fine"}}}}, {"Get": {"TableName": table, "Key": key}}]
    with pytest.raises(ClientError) as caught:
        client.transact_get_items(TransactItems=items)
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert error["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError]"
    )
    reasons = error["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ValidationError"]
    assert reasons[1]["Message"] == "The provided key element does not match the schema"


def test_same_item_twice__validation_exception(client: Any, table: str) -> None:
    """Two Gets of one item: ValidationException ("Transaction request cannot include multiple operations on one
    item"), as DynamoDB refuses duplicate keys in one transaction."""
    get = {"Get": {"TableName": table, "Key": {"PK": {"S": "twice"}}}}
    assert refused(client.transact_get_items, TransactItems=[get, get]) == (
        "ValidationException",
        "Transaction request cannot include multiple operations on one item",
    )


def test_missing_table_still_resource_not_found(client: Any) -> None:
    """A Get on a table that does not exist: ResourceNotFoundException "Requested resource not found"
    (not a cancellation)."""
    get = {"Get": {"TableName": "labkit-no-such-table", "Key": {"PK": {"S": "x"}}}}
    assert refused(client.transact_get_items, TransactItems=[get]) == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )
