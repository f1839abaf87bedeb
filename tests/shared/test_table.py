"""The lab table helper: ensure, wait, reset, delete — all idempotent, all guarded."""

from __future__ import annotations

import uuid

import pytest

import labkit
from labkit.lab.invariants import (
    scan_items,
)
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.table import table_exists


def test_ensure_table__twice__creates_once_with_the_lab_layout(conn: Connection) -> None:
    """ensure_table is idempotent and gives PK/SK strings, on-demand billing and the email GSI."""
    name = f"labkit-t-{uuid.uuid4().hex[:8]}"
    try:
        assert labkit.ensure_table(conn, name) == name
        assert labkit.ensure_table(conn, name) == name
        desc = conn.client.describe_table(TableName=name)["Table"]
        assert desc["TableStatus"] == "ACTIVE"
        assert [k["AttributeName"] for k in desc["KeySchema"]] == ["PK", "SK"]
        assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        assert [g["IndexName"] for g in desc["GlobalSecondaryIndexes"]] == [C.EMAIL_INDEX_NAME]
    finally:
        labkit.delete_table(conn, name)


@pytest.mark.aws_verified
def test_reset_table__with_items__empties_it_and_is_idempotent(tconn: Connection) -> None:
    """reset_table deletes every item (more than one page) and a second reset deletes none."""
    for i in range(60):
        tconn.client.put_item(TableName=tconn.table_name, Item={"PK": {"S": f"P#{i}"}, "SK": {"S": "X"}})
    assert labkit.reset_table(tconn) == 60
    assert labkit.reset_table(tconn) == 0
    assert tconn.client.scan(TableName=tconn.table_name)["Count"] == 0


def test_reset_table__missing_table__creates_it(conn: Connection) -> None:
    """Resetting a table that does not exist yet creates it empty."""
    name = f"labkit-t-{uuid.uuid4().hex[:8]}"
    try:
        assert labkit.reset_table(conn, name) == 0
        assert table_exists(conn, name)
    finally:
        labkit.delete_table(conn, name)


def test_delete_table__twice__second_reports_nothing_to_do(conn: Connection) -> None:
    """delete_table returns True once, then False."""
    name = labkit.ensure_table(conn, f"labkit-t-{uuid.uuid4().hex[:8]}")
    assert labkit.delete_table(conn, name) is True
    assert labkit.delete_table(conn, name) is False


@pytest.mark.parametrize("action", [labkit.ensure_table, labkit.reset_table, labkit.delete_table])
def test_table_helpers__foreign_table_name__refused_before_any_call(conn: Connection, action: object) -> None:
    """A table not named labkit-* is never created, reset or deleted."""
    conn.client.create_table(
        TableName="orders-prod",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    conn.client.put_item(TableName="orders-prod", Item={"id": {"S": "1"}})
    try:
        with pytest.raises(labkit.TableError, match="only manages tables named labkit-"):
            action(conn, "orders-prod")  # type: ignore[operator]
        assert conn.client.scan(TableName="orders-prod")["Count"] == 1
    finally:
        conn.client.delete_table(TableName="orders-prod")


def test_scan_items__many_pages__returns_every_item_with_plain_values(tconn: Connection) -> None:
    """A paginated consistent scan returns every item, numbers as int/float, PK and SK first."""
    client, table = tconn.client, tconn.table_name
    big = "x" * 30_000  # ~30 KB each: 40 items exceed one 1 MB scan page
    for i in range(40):
        client.put_item(
            TableName=table,
            Item={
                "PK": {"S": f"ITEM#{i:02d}"},
                "SK": {"S": "A"},
                "n": {"N": str(i)},
                "half": {"N": "0.5"},
                "pad": {"S": big},
                "tags": {"SS": ["a", "b"]},
            },
        )
    assert "LastEvaluatedKey" in client.scan(TableName=table)
    df = scan_items(tconn)
    assert list(df.columns[:2]) == ["PK", "SK"]
    assert len(df) == 40
    assert list(df["PK"]) == [f"ITEM#{i:02d}" for i in range(40)]
    assert df["n"].tolist() == list(range(40)) and type(df["n"].tolist()[0]) is int
    assert df["half"].iloc[0] == 0.5 and df["tags"].iloc[0] == {"a", "b"}


def test_scan_items__empty_table__has_pk_and_sk_columns(tconn: Connection) -> None:
    """An empty table scans to an empty frame that still has PK and SK columns."""
    df = scan_items(tconn)
    assert df.empty and list(df.columns) == ["PK", "SK"]


def _operations(conn: Connection) -> list[str]:
    """The operation names ``conn``'s client sends from now on (botocore's before-call event)."""
    sent: list[str] = []
    conn.client.meta.events.register("before-call.dynamodb", lambda model, **_: sent.append(model.name))
    return sent


def test_ensure_and_delete_table__local_endpoint__no_describe_the_answers_already_gave(conn: Connection) -> None:
    """A local endpoint's CreateTable answers ACTIVE, so no waiter's DescribeTable follows it; DeleteTable
    is sent without asking first (its ResourceNotFoundException says there was nothing to delete)."""
    name = f"labkit-t-{uuid.uuid4().hex[:8]}"
    private = Connection(conn.backend, conn.endpoint_url, conn.region, name)
    sent = _operations(private)
    labkit.ensure_table(private, name)
    assert sent == ["DescribeTable", "CreateTable"]
    sent.clear()
    assert labkit.delete_table(private, name) is True
    assert sent == ["DeleteTable", "DescribeTable"]  # the waiter's one look: gone
    sent.clear()
    assert labkit.delete_table(private, name) is False
    assert sent == ["DeleteTable"]


def test_ensure_table__create_answers_creating__waits_until_active(conn: Connection) -> None:
    """AWS answers CreateTable with TableStatus CREATING: ensure_table then waits (DescribeTable) until ACTIVE."""
    from botocore.stub import Stubber

    name = f"labkit-t-{uuid.uuid4().hex[:8]}"
    private = Connection(conn.backend, conn.endpoint_url, conn.region, name)
    description = {"TableName": name, "TableStatus": "CREATING"}
    with Stubber(private.client) as stub:
        stub.add_client_error(
            "describe_table",
            service_error_code="ResourceNotFoundException",
            service_message="Requested resource not found",
        )
        stub.add_response("create_table", {"TableDescription": description})
        stub.add_response("describe_table", {"Table": {**description, "TableStatus": "ACTIVE"}})
        assert labkit.ensure_table(private, name) == name
        stub.assert_no_pending_responses()
