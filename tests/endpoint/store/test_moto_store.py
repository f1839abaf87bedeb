"""The moto store: moto's internals are checked when the engine starts (a mismatch is one clear
line); the fast path (moto's DynamoHandler methods called on the decoded JSON) answers as moto's
own dispatch does, request by request; binary values round-trip through both paths."""

from __future__ import annotations

import functools
import json
import uuid
from typing import Any

import pytest

import labkit
from labkit.endpoint import DynamoEngine
from labkit.endpoint.store import moto_adapter as _moto_adapter
from labkit.endpoint.store import moto_store as _moto_store
from labkit.shared.backend import Connection
from labkit.shared.table import table_spec
from tests.endpoint.clients import engine_headers
from tests.endpoint.tables import key

moto_store: Any = _moto_store  # the tests probe moto internals the modules do not export
moto_adapter: Any = _moto_adapter


def test_start__moto_lacks_a_method_the_engine_calls__one_line_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(moto_adapter, "_prepared", False)
    monkeypatch.delattr(moto_adapter.DynamoHandler, "transact_get_items")
    with pytest.raises(labkit.ConfigurationError) as caught:
        moto_store.MotoStore()
    message = str(caught.value)
    assert "\n" not in message
    assert "DynamoHandler.transact_get_items" in message
    assert "labkit needs moto[dynamodb]>=5.2.5,<5.3;" in message and "bootstrap.py" in message


def test_start__moto_as_expected__item_registry_off_and_dynamodb_limits() -> None:
    moto_store.MotoStore()
    assert moto_adapter.Item.__new__ is moto_adapter._new  # not BaseModel.__new__, which registers every instance
    assert moto_adapter.LimitedSizeDict.__setitem__ is dict.__setitem__  # no 405,000-byte cap
    assert moto_adapter.moto_responses.TRANSACTION_MAX_ITEMS == 100


# --- the fast path agrees with moto's dispatch ---------------------------------------------------

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"Item": {**key("A"), "n": {"N": "1"}, "m": {"M": {"x": {"L": [{"S": "y"}]}}}}}),
    ("GetItem", {"Key": key("A")}),
    ("GetItem", {"Key": key("missing")}),
    (
        "GetItem",
        {"Key": key("A"), "ProjectionExpression": "#n", "ExpressionAttributeNames": {"#n": "n"}},
    ),
    (
        "PutItem",
        {
            "Item": key("A"),
            "ConditionExpression": "attribute_not_exists(PK)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    (
        "UpdateItem",
        {
            "Key": key("A"),
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "UpdateItem",
        {
            "Key": key("A"),
            "UpdateExpression": "SET n = :v",
            "ConditionExpression": "n = :old",
            "ExpressionAttributeValues": {":v": {"N": "9"}, ":old": {"N": "0"}},
        },
    ),
    (
        "UpdateItem",
        {
            "Key": key("A"),
            "UpdateExpression": "SET n = :v",
            "ReturnValues": "UPDATED_OLD",
            "ExpressionAttributeValues": {":v": {"N": "7"}},
        },
    ),
    (
        "Query",
        {"KeyConditionExpression": "PK = :pk", "ExpressionAttributeValues": {":pk": {"S": "A"}}},
    ),
    (
        "TransactWriteItems",
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": "$T",
                        "Item": key("A"),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
            ]
        },
    ),
    ("DeleteItem", {"Key": key("A"), "ReturnValues": "ALL_OLD"}),
    ("GetItem", {"TableName": "labkit-no-such-table", "Key": key("A")}),
    (
        "UpdateItem",
        {
            "Key": {"PK": {"S": "A"}},
            "UpdateExpression": "SET n = :v",
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        },
    ),
]


def _normalise(body: bytes, table: str) -> Any:
    payload = json.loads(body.decode().replace(table, "$T") or "{}")
    payload.pop("ConsumedCapacity", None)
    payload.pop("ConsumedCapacityUnits", None)
    if isinstance(payload.get("__type"), str):  # moto's two paths word some messages differently
        payload = {"__type": payload["__type"]}
    return payload


def test_fast_path__same_answers_as_moto_handler_for_hot_operations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Status and body of the fast path equal moto's own dispatch (both validated), request by request."""
    from labkit.endpoint.checks.request import validate
    from labkit.endpoint.errors import ClientFault
    from labkit.endpoint.operations import steps_of
    from labkit.endpoint.wire.decode import decode
    from labkit.endpoint.wire.encode import fault_response, response

    store = DynamoEngine().store
    fast_table, moto_table = (f"labkit-cmp-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for table in (fast_table, moto_table):
        body = json.dumps(table_spec(table)).encode()
        store.dispatch(decode(engine_headers("CreateTable"), body, store.account_of))
    fast_operations = dict(moto_store.FAST_OPERATIONS)
    for operation, request in SCRIPT:
        answers = []
        for table, fast in ((fast_table, True), (moto_table, False)):
            monkeypatch.setattr(moto_store, "FAST_OPERATIONS", fast_operations if fast else {})
            params = json.loads(json.dumps({"TableName": table, **request}).replace("$T", table))
            decoded = decode(engine_headers(operation), json.dumps(params).encode(), store.account_of)
            try:
                steps = steps_of(operation)
                plan = validate(decoded, functools.partial(store.schema, decoded.account, decoded.region), steps.check)
                given = steps.to_moto(decoded.params, plan.parsed_of)
                payload = store.apply(decoded, plan, given, track=False).payload
                steps.finish(decoded.params, payload, plan.parsed_of)
                status, _, out = response(200, payload)
            except ClientFault as fault:
                status, _, out = fault_response(fault)
            answers.append((status, _normalise(out, table)))
        assert answers[0] == answers[1], f"{operation} {request}"


def test_fast_path__binary_values__round_trip_through_both_paths(lab: Connection) -> None:
    """Binary attributes (written by moto's full path) read back as the same bytes."""
    client = lab.client
    raw = bytes(range(256))
    item = {**key("BIN"), "b": {"B": raw}, "bs": {"BS": [b"\x00", b"\xff"]}}
    client.put_item(TableName=lab.table_name, Item=item)
    got = client.get_item(TableName=lab.table_name, Key=key("BIN"))["Item"]
    queried = client.query(
        TableName=lab.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "BIN"}},
    )["Items"]
    assert got["b"] == {"B": raw}
    assert sorted(got["bs"]["BS"]) == [b"\x00", b"\xff"]
    assert queried == [got]
