"""Call keys name the items a call touches, by the table's key schema (DescribeTable), never by guess."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labkit.races import call_key, explore, run_interleaving
from labkit.shared.backend import Connection
from tests.helpers import hash_key_table
from tests.races.increments import KEY


def test_call_key__items_keys_and_transactions__short_strings() -> None:
    """Keys print as PK/SK; transactions list every item's key."""
    assert call_key("GetItem", {"Key": KEY}) == "COUNTER/C"
    assert call_key("PutItem", {"Item": {**KEY, "n": {"N": "1"}}}) == "COUNTER/C"
    tx = {
        "TransactItems": [
            {"Put": {"Item": {"PK": {"S": "ACCT#1"}, "SK": {"S": "PROFILE"}}}},
            {"Put": {"Item": {"PK": {"S": "UNIQ#EMAIL#a@x.io"}, "SK": {"S": "LOCK"}}}},
            {"ConditionCheck": {"Key": {"PK": {"S": "X"}, "SK": {"S": "Y"}}}},
        ]
    }
    assert call_key("TransactWriteItems", tx) == "ACCT#1/PROFILE; UNIQ#EMAIL#a@x.io/LOCK; X/Y"
    assert call_key("Query", {"ExpressionAttributeValues": {":e": {"S": "a@x.io"}}}) == "a@x.io"


PAYMENT = {"pk": {"S": "PAYMENT#p-1"}, "account": {"S": "acme"}, "amount": {"N": "120"}}
SCHEMAS: dict[str, Any] = {"payments": ("pk", None), "ledger": ("account", "at")}


def test_call_key__table_keyed_pk_with_attributes_sorting_before_it__named_by_the_key_schema() -> None:
    """A PutItem of ``{"pk": "PAYMENT#p-1", "account": "acme", ...}`` on a table keyed ``pk`` is ``PAYMENT#p-1``
    (not ``acme``, the first attribute by name); each action of a transaction by its own table's schema."""
    assert call_key("PutItem", {"TableName": "payments", "Item": PAYMENT}, SCHEMAS.get) == "PAYMENT#p-1"
    tx = {
        "TransactItems": [
            {"Put": {"TableName": "payments", "Item": PAYMENT}},
            {"Put": {"TableName": "ledger", "Item": {"at": {"N": "7"}, "account": {"S": "acme"}, "amt": {"N": "1"}}}},
        ]
    }
    assert call_key("TransactWriteItems", tx, SCHEMAS.get) == "PAYMENT#p-1; acme/7"


@pytest.fixture
def payments(conn: Connection) -> Iterator[str]:
    """A table keyed ``pk`` (S) alone, as team code has it; its items carry ``account`` (sorting before ``pk``)."""
    with hash_key_table(conn.client, "payments", "pk") as name:
        yield name


def _record_then_settle(table: str) -> dict[str, Any]:
    def record(client: Any) -> None:
        client.put_item(TableName=table, Item={**PAYMENT, "status": {"S": "pending"}})

    def settle(client: Any) -> None:
        client.update_item(
            TableName=table,
            Key={"pk": PAYMENT["pk"]},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "settled"}},
        )

    return {"A": record, "B": settle}


def test_history__put_item_on_a_table_keyed_pk__key_column_names_the_item(conn: Connection, payments: str) -> None:
    """run_interleaving's history names a PutItem's item from the table's KeySchema: ``PAYMENT#p-1``, the same key
    as the UpdateItem of that item, and no DescribeTable appears among the actors' calls."""
    res = run_interleaving(_record_then_settle(payments), "AB", conn=conn)
    assert list(res.history["key"]) == ["PAYMENT#p-1", "PAYMENT#p-1"]
    assert list(res.history["operation"]) == ["PutItem", "UpdateItem"]


def test_explore__put_item_on_a_table_keyed_pk__counterexample_history_names_the_item(
    conn: Connection, payments: str
) -> None:
    """explore's counterexample history names both calls by the item they touch, ``PAYMENT#p-1``."""

    def reset() -> None:
        conn.client.delete_item(TableName=payments, Key={"pk": PAYMENT["pk"]})

    def settled_last(res: Any) -> None:
        item = conn.client.get_item(TableName=payments, Key={"pk": PAYMENT["pk"]}, ConsistentRead=True)["Item"]
        assert item["status"] == {"S": "settled"}, "the payment ended pending"

    result = explore(_record_then_settle(payments), conn=conn, setup=reset, invariant=settled_last)
    assert not result.passed
    assert result.interleaving is not None
    assert list(result.interleaving.history["key"]) == ["PAYMENT#p-1", "PAYMENT#p-1"]
