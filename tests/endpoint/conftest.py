"""Helpers shared by the engine's test files (tests/endpoint/ and its folders, one per room of
labkit/endpoint/): a raw HTTP poster, boto3 clients with client-side validation and retries off, a
table factory, a fake clock, and the fixtures ``endpoint`` (one embedded endpoint per test module),
``client`` (a raw client of it), ``lab`` (a connection to it with a fresh lab table) and ``racy``;
a module that needs another endpoint (a fake clock, short timeouts) defines its own ``endpoint``."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlparse

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, settings

import labkit
from labkit.embedded import start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.catalogue import DYNAMODB_TARGET

#: The fuzz tests' example count: 100 in the README's loop; the workflow's nightly job runs 2,000
#: (LABKIT_FUZZ_EXAMPLES=2000; 5000 for a deeper local run).
FUZZ_EXAMPLES = int(os.environ.get("LABKIT_FUZZ_EXAMPLES", 100))
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


class FakeClock:
    """A monotonic clock that only moves when told to (``clock.now += seconds``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def raw_client(url: str, region: str = REGION) -> Any:
    """A labkit client of ``url`` (:meth:`Connection.new_client`, its own session) that sends what it is
    given (no parameter validation) and never retries."""
    return Connection("embedded", url, region).new_client(
        parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1}
    )


def create_gsi(client: Any, table: str, index: str, attribute: str, kind: str = "S", projection: str = "ALL") -> None:
    """UpdateTable: a new GSI ``index`` keyed on ``attribute`` (of type ``kind``) alone, defined in the request."""
    client.update_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": kind}],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": index,
                    "KeySchema": [{"AttributeName": attribute, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": projection},
                }
            }
        ],
    )


def hot_write(client: Any, table: str) -> str:
    """One ``ADD n :one`` to the hot key (PK HOT, SK X): "ok", or the error code it was refused with."""
    try:
        client.update_item(
            TableName=table,
            Key={"PK": {"S": "HOT"}, "SK": {"S": "X"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
    except ClientError as exc:
        return error_code(exc)
    return "ok"


def streams_client(url: str, region: str = REGION) -> Any:
    """A DynamoDB Streams client of ``url`` (its own session) with dummy credentials."""
    import boto3

    keys: dict[str, Any] = {"aws_access_key_id": "labkit", "aws_secret_access_key": "labkit"}
    return boto3.session.Session().client("dynamodbstreams", endpoint_url=url, region_name=region, **keys)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint() as ep:
        yield ep


@pytest.fixture(scope="module")
def client(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url)


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    """The module's fake clock (for a module whose ``endpoint`` runs on it)."""
    return FakeClock()


@pytest.fixture
def lab(endpoint: EmbeddedEndpoint) -> Iterator[Connection]:
    """A connection to the module's endpoint whose lab table is fresh and empty."""
    name = f"labkit-ep-{uuid.uuid4().hex[:10]}"
    conn = Connection("embedded", endpoint.url, C.LOCAL_REGION, name)
    labkit.ensure_table(conn, name)
    yield conn
    labkit.delete_table(conn, name)


@pytest.fixture
def racy() -> Iterator[None]:
    """Switch threads every 0.1 ms in this process, so an unlocked check-then-write would lose."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(before)


def key(pk: str, sk: str = "A") -> dict[str, Any]:
    """A lab table's key."""
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def error_code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def count_items(lab: Connection) -> int:
    """How many items the lab table holds."""
    return int(lab.client.scan(TableName=lab.table_name, Select="COUNT")["Count"])


def engine_headers(operation: str, region: str = REGION) -> dict[str, str]:
    """The lower-case headers a request for ``operation`` reaches the engine with."""
    return {
        "x-amz-target": f"{DYNAMODB_TARGET}.{operation}",
        "content-type": "application/x-amz-json-1.0",
        "authorization": AUTH.format(region=region),
    }


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


def make_table(
    client: Any,
    *,
    range_key: bool = True,
    gsi: bool = False,
    stream: bool = False,
    lsi: bool = False,
    name: str | None = None,
    keys: Sequence[tuple[str, str]] | None = None,
) -> str:
    """A fresh PAY_PER_REQUEST table PK (S) [+ SK (S)] [+ GSI email-index on email (S)] [+ LSI at-index on at (S)];
    ``keys`` names other key attributes and their types, the hash key first (``[("id", "N"), ("seq", "N")]``)."""
    name = name or f"labkit-eng-{uuid.uuid4().hex[:10]}"
    if keys is None:
        keys = [("PK", "S"), ("SK", "S")] if range_key else [("PK", "S")]
    schema = [{"AttributeName": a, "KeyType": kind} for (a, _), kind in zip(keys, ("HASH", "RANGE"), strict=False)]
    attrs = [{"AttributeName": a, "AttributeType": t} for a, t in keys]
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
    if lsi:
        attrs.append({"AttributeName": "at", "AttributeType": "S"})
        extra["LocalSecondaryIndexes"] = [
            {
                "IndexName": "at-index",
                "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if stream:
        extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    client.create_table(
        TableName=name, KeySchema=schema, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST", **extra
    )
    return name


def scan_all(client: Any, table: str) -> list[dict[str, Any]]:
    return sorted(
        client.scan(TableName=table, ConsistentRead=True)["Items"],
        key=lambda i: json.dumps(i, sort_keys=True, default=repr),
    )


#: The start of a script that measures the engine's memory in a fresh process: ``engine`` (no HTTP
#: server), ``call(op, params, weak=None)`` that asserts a 200, ``rss()`` after a collection, and
#: the table ``mem`` keyed ``PK`` (S). A test adds what it measures and prints it last.
MEMORY_PRELUDE = (
    f"AUTH = {AUTH.format(region=REGION)!r}\n"
    + r"""
import gc, json, os
from labkit.embedded import build_engine

engine = build_engine()

def call(op, params, weak=None):
    headers = {"x-amz-target": "DynamoDB_20120810." + op, "authorization": AUTH}
    if weak:
        headers["x-labkit-weak-answer"] = weak
    status, _, body = engine.handle(headers, json.dumps(params).encode())
    assert status == 200, body

def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

call("CreateTable", {"TableName": "mem", "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
                     "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
                     "BillingMode": "PAY_PER_REQUEST"})
"""
)


def measure_memory(script: str, **env: str) -> str:
    """Run :data:`MEMORY_PRELUDE` + ``script`` in a fresh Python with ``env`` added; its last line of output."""
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PRELUDE + script],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]
