"""Decoding: a body or target DynamoDB cannot read is a 400 with DynamoDB's code, never a 500;
an engine bug is a 500 with its traceback on the server's stderr. Raw HTTP to a real endpoint."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

import pytest

from labkit.embedded import start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint, Rejection, RequestInfo
from tests.endpoint.clients import code_of, post
from tests.endpoint.tables import hash_table

TARGET = "DynamoDB_20120810.ListTables"
BUG_TABLE = f"labkit-bug-{uuid.uuid4().hex[:8]}"


BAD_BODIES: dict[str, bytes] = {
    "malformed JSON": b'{"TableName": ',
    "a JSON array": b"[1, 2]",
    "a JSON string": b'"ListTables"',
    "an empty body": b"",
    "invalid UTF-8": b'{"TableName": "\xff\xfe"}',
    "nesting 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("case", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_decode__unreadable_body__400_serialization_exception(endpoint: EmbeddedEndpoint, case: str) -> None:
    status, payload = post(endpoint.url, TARGET, BAD_BODIES[case])
    assert (status, code_of(payload)) == (400, "SerializationException"), payload


@pytest.mark.parametrize(
    "target",
    [None, "DynamoDB_20120810.Frobnicate", "Other_20120810.ListTables", "DynamoDB_20120810", ""],
    ids=["missing", "unknown operation", "unknown service", "no operation", "empty"],
)
def test_decode__unknown_operation__400_unknown_operation_exception(
    endpoint: EmbeddedEndpoint, target: str | None
) -> None:
    status, payload = post(endpoint.url, target, b"{}")
    assert (status, code_of(payload)) == (400, "UnknownOperationException")


def test_decode__wrong_json_type_for_a_member__400_serialization_exception(endpoint: EmbeddedEndpoint) -> None:
    status, payload = post(endpoint.url, "DynamoDB_20120810.GetItem", json.dumps({"TableName": 5, "Key": {}}).encode())
    assert (status, code_of(payload)) == (400, "SerializationException")


def test_decode__missing_required_member__400_in_dynamodb_words(endpoint: EmbeddedEndpoint) -> None:
    status, payload = post(endpoint.url, "DynamoDB_20120810.GetItem", b'{"Key": {"PK": {"S": "a"}}}')
    assert (status, code_of(payload)) == (400, "ValidationException")
    assert payload["message"] == (
        "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null"
    )


def test_decode__operation_moto_does_not_implement__400_saying_what_to_use(endpoint: EmbeddedEndpoint) -> None:
    status, payload = post(
        endpoint.url, "DynamoDB_20120810.DescribeKinesisStreamingDestination", b'{"TableName": "labkit-t"}'
    )
    assert (status, code_of(payload)) == (400, "UnknownOperationException")
    assert "DynamoDB Local" in payload["message"]


def test_control_plane__create_table_without_key_schema__400_validation_exception(endpoint: EmbeddedEndpoint) -> None:
    status, payload = post(endpoint.url, "DynamoDB_20120810.CreateTable", b'{"TableName": "labkit-no-keys"}')
    assert (status, code_of(payload)) == (400, "ValidationException")
    assert payload["message"] == (
        "1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null"
    )


class _Broken:
    """A hook with a bug: what an engine bug looks like from outside."""

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        raise RuntimeError("hook bug for the test")

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        return None


def test_engine_bug__500_internal_server_error_and_traceback_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    engine = DynamoEngine(hooks=[_Broken()])
    with start_endpoint(engine=engine) as ep:
        post(ep.url, "DynamoDB_20120810.CreateTable", json.dumps(hash_table(BUG_TABLE)).encode())
        body = json.dumps({"TableName": BUG_TABLE, "Key": {"PK": {"S": "a"}}}).encode()
        status, payload = post(ep.url, "DynamoDB_20120810.GetItem", body)
    err = capfd.readouterr().err
    assert (status, code_of(payload)) == (500, "InternalServerError")
    assert "Traceback (most recent call last)" in err
    assert "RuntimeError: hook bug for the test" in err
