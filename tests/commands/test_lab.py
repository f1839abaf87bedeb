"""labkit.lab: a lesson's first cell, and how a lesson's cell learns that labkit's engine is not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import labkit
from labkit.embedded import DYNAMODB_LOCAL, start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.lab import engine_available, has_engine, where
from labkit.shared.backend import Connection


@pytest.fixture(scope="module")
def like_local() -> Iterator[EmbeddedEndpoint]:
    """An endpoint that behaves like DynamoDB Local (`labkit serve --profile dynamodb-local`)."""
    with start_endpoint(profile=DYNAMODB_LOCAL) as endpoint:
        yield endpoint


def test_engine_available__embedded_endpoint__true_and_prints_nothing(
    conn: Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared embedded endpoint is labkit's engine: the cell runs, and says nothing about skipping."""
    if conn.backend != "embedded":
        pytest.skip("LABKIT_TEST_BACKEND chose another backend")
    assert has_engine(conn) and engine_available(conn, "needs the partition model")
    assert capsys.readouterr().out == ""


def test_engine_available__dynamodb_local__false_and_the_reason_printed(
    like_local: EmbeddedEndpoint, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """LABKIT_BACKEND=local: the cell is skipped with the backend and the lesson's reason printed."""
    monkeypatch.setenv("LABKIT_LOCAL_URL", like_local.url)
    local = labkit.connect("local")
    assert not engine_available(local, "its throttling comes from labkit's partition model")
    assert capsys.readouterr().out == (
        "skipped on DynamoDB Local (LABKIT_BACKEND=local): its throttling comes from labkit's partition model\n"
    )


def test_has_engine__embedded_url_serving_the_dynamodb_local_profile__false(
    like_local: EmbeddedEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LABKIT_EMBEDDED_URL at a `labkit serve --profile dynamodb-local`: backend "embedded", but no controls."""
    monkeypatch.setenv("LABKIT_EMBEDDED_URL", like_local.url)
    shared = labkit.connect("embedded")
    assert shared.backend == "embedded" and not has_engine(shared)


def test_where__each_backend__named_for_a_reader(like_local: EmbeddedEndpoint) -> None:
    """DynamoDB Local and AWS by name and variable; any other endpoint by URL."""
    assert where(Connection("local", like_local.url, "us-east-1")) == "DynamoDB Local (LABKIT_BACKEND=local)"
    assert where(Connection("aws", None, "eu-west-1")) == "AWS (LABKIT_BACKEND=aws)"
    assert where(Connection("endpoint", like_local.url, "us-east-1")) == f"the endpoint at {like_local.url}"
    assert not has_engine(Connection("aws", None, "eu-west-1"))  # asks nothing of AWS


def test_recording__transactions_in_the_block__parameters_as_passed_without_the_token(tconn: Connection) -> None:
    """What the caller passed (not botocore's serialised body), token dropped, nothing after the block."""
    from labkit.lab import recording

    client = tconn.new_client()
    put: Any = {"Put": {"TableName": tconn.table_name, "Item": {"PK": {"S": "R"}, "SK": {"S": "1"}}}}
    with recording(client) as sent:
        client.transact_write_items(TransactItems=[put], ClientRequestToken="t" * 36)
        client.put_item(TableName=tconn.table_name, Item={"PK": {"S": "R"}, "SK": {"S": "2"}})
    client.transact_write_items(TransactItems=[put])
    assert sent == [{"TransactItems": [put]}]
