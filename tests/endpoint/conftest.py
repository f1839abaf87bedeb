"""Helpers shared by the engine's test files (tests/endpoint/): a raw HTTP poster,
boto3 clients with client-side validation and retries off, a table factory, and the fixtures
``endpoint`` (one embedded endpoint per test module) and ``client`` (a raw client of it); a module
that needs another endpoint (a fake clock, short timeouts) defines its own."""

from __future__ import annotations

import http.client
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings

from labkit.embedded import start_endpoint
from labkit.endpoint import EmbeddedEndpoint

#: The fuzz tests' example count (LABKIT_FUZZ_EXAMPLES=5000 for a deeper local run).
FUZZ_EXAMPLES = int(os.environ.get("LABKIT_FUZZ_EXAMPLES", 250))
settings.register_profile(
    "labkit-ci",
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: The fuzz tests' hypothesis settings: a fixed example count, derandomized (a CI failure replays locally).
FUZZ = settings.get_profile("labkit-ci")

REGION = "us-east-1"
AUTH = "AWS4-HMAC-SHA256 Credential=labkit/20260101/{region}/dynamodb/aws4_request, SignedHeaders=host, Signature=0"


def raw_client(url: str, region: str = REGION) -> Any:
    """A boto3 client that sends what it is given (no parameter validation) and never retries."""
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name=region,
        aws_access_key_id="labkit",
        aws_secret_access_key="labkit",
        config=Config(parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1}),
    )


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint() as ep:
        yield ep


@pytest.fixture(scope="module")
def client(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url)


def post(url: str, target: str | None, body: bytes, region: str = REGION) -> tuple[int, dict[str, Any]]:
    """One raw HTTP POST; (status, decoded JSON body)."""
    parts = urlparse(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    headers = {"content-type": "application/x-amz-json-1.0", "authorization": AUTH.format(region=region)}
    if target is not None:
        headers["x-amz-target"] = target
    try:
        conn.request("POST", "/", body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    return resp.status, json.loads(data or b"{}")


def refused(call: Any, **kwargs: Any) -> tuple[str, str]:
    """(code, message) of the error ``call(**kwargs)`` must get: a 4xx, never a 500 for a client's request."""
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    error = caught.value.response
    assert 400 <= error["ResponseMetadata"]["HTTPStatusCode"] < 500, error
    return str(error["Error"]["Code"]), str(error["Error"]["Message"])


def code_of(payload: dict[str, Any]) -> str:
    return str(payload.get("__type", "")).rpartition("#")[2]


def make_table(client: Any, *, range_key: bool = True, gsi: bool = False, stream: bool = False) -> str:
    """A fresh PAY_PER_REQUEST table PK (S) [+ SK (S)] [+ GSI email-index on email (S)]."""
    name = f"labkit-eng-{uuid.uuid4().hex[:10]}"
    keys = [{"AttributeName": "PK", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "PK", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "SK", "KeyType": "RANGE"})
        attrs.append({"AttributeName": "SK", "AttributeType": "S"})
    extra: dict[str, Any] = {}
    if gsi:
        attrs.append({"AttributeName": "email", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "email-index",
                "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if stream:
        extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    client.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST", **extra
    )
    return name


def scan_all(client: Any, table: str) -> list[dict[str, Any]]:
    return sorted(
        client.scan(TableName=table, ConsistentRead=True)["Items"],
        key=lambda i: json.dumps(i, sort_keys=True, default=repr),
    )
