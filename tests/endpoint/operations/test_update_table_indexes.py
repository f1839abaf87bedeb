"""UpdateTable's GlobalSecondaryIndexUpdates, refused as DynamoDB refuses them (API reference: UpdateTable,
"AttributeDefinitions ... must include the key element(s) of any new index"; ResourceNotFoundException for an
index that does not exist), before moto changes anything; never a 500."""

from __future__ import annotations

from typing import Any

from tests.endpoint.clients import refused
from tests.endpoint.tables import create_gsi, make_table


def _indexes(client: Any, table: str) -> list[str]:
    described = client.describe_table(TableName=table)["Table"]
    return [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])]


def test_create_index__key_not_in_attribute_definitions__validation_exception(client: Any) -> None:
    """A new GSI keyed on an attribute neither the request nor the table defines: ValidationException ("Some index
    key attributes are not defined in AttributeDefinitions"); the table keeps its indexes."""
    table = make_table(client)
    create = {
        "IndexName": "gsiBadAttr",
        "KeySchema": [{"AttributeName": "unknownAttr", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    assert refused(client.update_table, TableName=table, GlobalSecondaryIndexUpdates=[{"Create": create}]) == (
        "ValidationException",
        "One or more parameter values were invalid: Some index key attributes are not defined in "
        "AttributeDefinitions. Keys: [unknownAttr], AttributeDefinitions: []",
    )
    assert _indexes(client, table) == []


def test_create_index__key_defined_in_the_request__added(client: Any) -> None:
    """The same index with its key in the request's AttributeDefinitions is added (the rule's other side)."""
    table = make_table(client)
    create_gsi(client, table, "gsi1", "gsiPk")
    assert _indexes(client, table) == ["gsi1"]


def test_delete_index_that_does_not_exist__resource_not_found(client: Any) -> None:
    """Deleting (or updating) a GSI the table does not have: ResourceNotFoundException, not a 500."""
    table = make_table(client, gsi=True)
    for update in (
        {"Delete": {"IndexName": "doesNotExist"}},
        {
            "Update": {
                "IndexName": "doesNotExist",
                "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
            }
        },
    ):
        assert refused(client.update_table, TableName=table, GlobalSecondaryIndexUpdates=[update]) == (
            "ResourceNotFoundException",
            "Requested resource not found",
        )
    assert _indexes(client, table) == ["email-index"]
