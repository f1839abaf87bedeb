"""Talking to the engine under test, and reading its refusals: a labkit client that sends what it is given
and never retries, a DynamoDB Streams client, one raw HTTP POST, the headers a request reaches the engine
with, and an error's code (from a botocore error, a raw answer's body, or a call that must be refused)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlparse

import pytest
from botocore.exceptions import ClientError

from labkit.shared.backend import Connection
from labkit.shared.catalogue import DYNAMODB_TARGET

REGION = "us-east-1"
AUTH = "AWS4-HMAC-SHA256 Credential=labkit/20260101/{region}/dynamodb/aws4_request, SignedHeaders=host, Signature=0"


def raw_client(url: str, region: str = REGION) -> Any:
    """A labkit client of ``url`` (:meth:`Connection.new_client`, its own session) that sends what it is
    given (no parameter validation) and never retries."""
    return Connection("embedded", url, region).new_client(
        parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1}
    )


def streams_client(url: str, region: str = REGION) -> Any:
    """A DynamoDB Streams client of ``url`` (its own session) with dummy credentials."""
    import boto3

    keys: dict[str, Any] = {"aws_access_key_id": "labkit", "aws_secret_access_key": "labkit"}
    return boto3.session.Session().client("dynamodbstreams", endpoint_url=url, region_name=region, **keys)


def error_code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


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
