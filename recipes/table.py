"""The table the lessons use: string PK and SK, on-demand, and a GSI on ``email``.

Created idempotently: two deploys may create it at once, and a lost answer resent by botocore
meets the table its first attempt created. Both answer ``ResourceInUseException``, which means
"it exists"; then wait until it is ACTIVE.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

DEFINITION: dict[str, Any] = {
    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
    "AttributeDefinitions": [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
        {"AttributeName": "email", "AttributeType": "S"},
    ],
    "BillingMode": "PAY_PER_REQUEST",
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "email-index",  # finds an account by email; it enforces nothing (lesson 02 §1)
            "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        }
    ],
}


def ensure_table(client: Any, name: str) -> None:
    """Create the table unless it exists, then wait until it is ACTIVE."""
    try:
        client.create_table(TableName=name, **DEFINITION)
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ResourceInUseException":
            raise  # e.g. a ValidationException: the definition is wrong, say so
        # it exists: another deploy created it, or our own first attempt whose answer was lost
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
