"""A batch's or transaction's front door, in DynamoDB's words: an empty ``RequestItems``, too many
keys or requests, an empty binary set. Each test quotes the answer DynamoDB gives (recorded against
DynamoDB: the public conformance suite's expectations) and checks nothing was written."""

from __future__ import annotations

import re
from typing import Any

import pytest

from labkit.shared import constants as C
from tests.endpoint.clients import refused
from tests.endpoint.tables import make_table, scan_all


@pytest.fixture(scope="module")
def table(client: Any) -> str:
    """PK (S), no sort key."""
    return make_table(client, range_key=False)


def _key(i: int | str) -> dict[str, Any]:
    return {"PK": {"S": f"k{i}"}}


@pytest.mark.parametrize("operation", ["BatchGetItem", "BatchWriteItem"])
def test_empty_request_items__the_requestitems_parameter_is_required(client: Any, operation: str) -> None:
    """ "The requestItems parameter is required for BatchGetItem" (and for BatchWriteItem): an empty map is
    a missing parameter to DynamoDB's front door."""
    call = client.batch_get_item if operation == "BatchGetItem" else client.batch_write_item
    assert refused(call, RequestItems={}) == (
        "ValidationException",
        f"The requestItems parameter is required for {operation}",
    )


def test_batch_get__101_keys_for_one_table__names_the_tables_keys_member(client: Any, table: str) -> None:
    """ "1 validation error detected: Value at 'RequestItems.<table>.member.Keys' failed to satisfy constraint:
    Member must have length less than or equal to 100" (no value echoed)."""
    keys = [_key(i) for i in range(C.MAX_BATCH_GET_KEYS + 1)]
    assert refused(client.batch_get_item, RequestItems={table: {"Keys": keys}}) == (
        "ValidationException",
        f"1 validation error detected: Value at 'RequestItems.{table}.member.Keys' failed to satisfy constraint: "
        "Member must have length less than or equal to 100",
    )


def test_batch_write__26_requests__map_value_constraint_with_the_requests_echoed(client: Any, table: str) -> None:
    """ "1 validation error detected: Value '{<table>=[...]}' at 'requestItems' failed to satisfy constraint: Map
    value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length
    greater than or equal to 1]" — the requests echoed as Java prints them; nothing written."""
    requests = [{"PutRequest": {"Item": _key(i)}} for i in range(C.MAX_BATCH_WRITE_ITEMS + 1)]
    code, message = refused(client.batch_write_item, RequestItems={table: requests})
    assert code == "ValidationException"
    pattern = (
        rf"1 validation error detected: Value '\{{{re.escape(table)}=\[.+\]\}}' at 'requestItems' failed to satisfy "
        r"constraint: Map value must satisfy constraint: \[Member must have length less than or equal to 25, "
        r"Member must have length greater than or equal to 1\]"
    )
    assert re.fullmatch(pattern, message, re.S), message
    assert "{PutRequest: {Item: {PK={S: k0,}},},}" in message  # Java's toString of the first request
    assert scan_all(client, table) == []


@pytest.mark.parametrize("operation", ["TransactGetItems", "TransactWriteItems"])
def test_transaction__101_actions__the_whole_list_echoed_in_brackets(client: Any, table: str, operation: str) -> None:
    """ "1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy constraint: Member must
    have length less than or equal to 100" — the list echoed whole (not cut), so it ends in "]"."""
    n = C.MAX_TRANSACT_ITEMS + 1
    if operation == "TransactGetItems":
        items: list[dict[str, Any]] = [{"Get": {"TableName": table, "Key": _key(i)}} for i in range(n)]
        call = client.transact_get_items
    else:
        items = [{"Put": {"TableName": table, "Item": _key(i)}} for i in range(n)]
        call = client.transact_write_items
    code, message = refused(call, TransactItems=items)
    assert code == "ValidationException"
    pattern = (
        r"1 validation error detected: Value '\[.+\]' at 'transactItems' failed to satisfy constraint: "
        r"Member must have length less than or equal to 100"
    )
    assert re.fullmatch(pattern, message, re.S), message[-300:]
    assert "k100" in message  # the last action is there: nothing was cut
    assert scan_all(client, table) == []


def test_put_item__empty_binary_set__binary_sets_should_not_be_empty(client: Any, table: str) -> None:
    """ "One or more parameter values were invalid: Binary sets should not be empty" (DynamoDB words the binary
    set apart from "An string set  may not be empty")."""
    assert refused(client.put_item, TableName=table, Item={**_key("bs"), "bad": {"BS": []}}) == (
        "ValidationException",
        "One or more parameter values were invalid: Binary sets should not be empty",
    )
    assert refused(client.put_item, TableName=table, Item={**_key("ss"), "bad": {"SS": []}}) == (
        "ValidationException",
        "One or more parameter values were invalid: An string set  may not be empty",
    )
    assert scan_all(client, table) == []
