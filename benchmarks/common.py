"""What the benchmarks share: a client that never retries, and the one-key table they measure on."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

REGION = "us-east-1"


def client(url: str | None, pool: int = 10) -> Any:
    """A boto3 DynamoDB client with dummy credentials that never retries (no endpoint: in-process moto)."""
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(max_pool_connections=pool, retries={"mode": "standard", "max_attempts": 1}),
    )


def create_hash_table(c: Any, table: str) -> None:
    """A PAY_PER_REQUEST table keyed ``PK`` (S) alone."""
    c.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
