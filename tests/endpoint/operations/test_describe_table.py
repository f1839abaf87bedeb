"""DescribeTable's kept answer (decision 234) against moto's own answer, after every change a table can see.

The engine gives a regional table's DescribeTable body again while moto's ``describe()`` of the table is
unchanged. The differential: generated sequences of changes (items written and deleted, billing mode,
indexes, streams, deletion protection, TTL, tags, the table deleted and made again under its name),
each sent to the engine as a client's request; after each one, the engine's DescribeTable answer must
equal what moto's own dispatch answers for the same request at that moment, unkept.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.endpoint import DynamoEngine
from labkit.endpoint.operations.describe_table import KEPT
from labkit.endpoint.wire.decode import decode
from tests.endpoint.clients import engine_headers
from tests.endpoint.tables import hash_table
from tests.helpers import derandomized

ENGINE = DynamoEngine()

GSI = {
    "IndexName": "by-email",
    "KeySchema": [{"AttributeName": "email", "KeyType": "HASH"}],
    "Projection": {"ProjectionType": "ALL"},
}


def _create(name: str) -> dict[str, Any]:
    return hash_table(name, "pk")


def _changes(name: str, arn: str, n: int) -> dict[str, tuple[str, dict[str, Any]]]:
    item = {"pk": {"S": f"k{n % 3}"}, "email": {"S": f"e{n}@x"}, "v": {"S": "x" * n}}
    email = [{"AttributeName": "email", "AttributeType": "S"}]
    return {
        "put": ("PutItem", {"TableName": name, "Item": item}),
        "delete": ("DeleteItem", {"TableName": name, "Key": {"pk": item["pk"]}}),
        "provisioned": (
            "UpdateTable",
            {
                "TableName": name,
                "BillingMode": "PROVISIONED",
                "ProvisionedThroughput": {"ReadCapacityUnits": 1 + n, "WriteCapacityUnits": 2},
            },
        ),
        "on-demand": ("UpdateTable", {"TableName": name, "BillingMode": "PAY_PER_REQUEST"}),
        "add-index": (
            "UpdateTable",
            {"TableName": name, "AttributeDefinitions": email, "GlobalSecondaryIndexUpdates": [{"Create": GSI}]},
        ),
        "drop-index": (
            "UpdateTable",
            {"TableName": name, "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "by-email"}}]},
        ),
        "stream-on": (
            "UpdateTable",
            {"TableName": name, "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}},
        ),
        "stream-off": ("UpdateTable", {"TableName": name, "StreamSpecification": {"StreamEnabled": False}}),
        "protect": ("UpdateTable", {"TableName": name, "DeletionProtectionEnabled": n % 2 == 0}),
        "ttl": (
            "UpdateTimeToLive",
            {"TableName": name, "TimeToLiveSpecification": {"Enabled": n % 2 == 0, "AttributeName": "exp"}},
        ),
        "tag": ("TagResource", {"ResourceArn": arn, "Tags": [{"Key": "t", "Value": str(n)}]}),
        "again": ("DeleteTable", {"TableName": name}),  # then made again under the same name
    }


def _send(operation: str, params: dict[str, Any]) -> tuple[int, Any]:
    status, _, body = ENGINE.handle(engine_headers(operation), json.dumps(params).encode())
    return status, json.loads(body or b"{}")


def _table(name: str) -> Any:
    """moto's table object behind ``name`` in the engine's store."""
    store = ENGINE.store
    asked = decode(engine_headers("DescribeTable"), json.dumps({"TableName": name}).encode(), store.account_of)
    return store.table_object(asked.account, asked.region, name)


def _unkept(name: str) -> tuple[int, Any]:
    """moto's own answer to DescribeTable now, past the kept body."""
    store = ENGINE.store
    body = json.dumps({"TableName": name}).encode()
    with ENGINE.lock:
        status, _, out = store.dispatch(decode(engine_headers("DescribeTable"), body, store.account_of))
    return status, json.loads(out or b"{}")


@settings(derandomized("LABKIT_DESCRIBE_EXAMPLES", 40))
@given(steps=st.lists(st.sampled_from(sorted(_changes("", "", 0))), min_size=1, max_size=14))
def test_describe_table__after_each_generated_change__kept_answer_equals_motos_own(steps: list[str]) -> None:
    name = f"labkit-dt-{uuid.uuid4().hex[:8]}"
    assert _send("CreateTable", _create(name))[0] == 200
    arn = _send("DescribeTable", {"TableName": name})[1]["Table"]["TableArn"]
    for n, step in enumerate(steps):
        operation, params = _changes(name, arn, n)[step]
        if step == "again":
            _send("UpdateTable", {"TableName": name, "DeletionProtectionEnabled": False})
            _send(operation, params)
            _send("CreateTable", _create(name))
        else:
            _send(operation, params)  # refused or not (an index already there, ...): the table may change
        assert _send("DescribeTable", {"TableName": name}) == _unkept(name), f"after {steps[: n + 1]}"
    _send("UpdateTable", {"TableName": name, "DeletionProtectionEnabled": False})
    _send("DeleteTable", {"TableName": name})


def test_describe_table__no_such_table__moto_answers_resource_not_found() -> None:
    """A table that is not there is not kept: the answer is DynamoDB's 'Requested resource not found'."""
    status, payload = _send("DescribeTable", {"TableName": f"labkit-dt-{uuid.uuid4().hex[:8]}"})
    assert status == 400
    assert payload["__type"].endswith("ResourceNotFoundException")
    assert "Requested resource not found" in payload["message"]


def test_describe_table__asked_twice_unchanged__second_answer_kept_not_dispatched(monkeypatch: Any) -> None:
    """The second DescribeTable of an unchanged table is the kept body (moto's dispatch is not asked);
    a write that changes the description (ItemCount) is dispatched again."""
    name = f"labkit-dt-{uuid.uuid4().hex[:8]}"
    assert _send("CreateTable", _create(name))[0] == 200
    dispatched: list[str] = []
    real = ENGINE.store.dispatch

    def dispatch(request: Any) -> Any:
        dispatched.append(request.operation)
        return real(request)

    monkeypatch.setattr(ENGINE.store, "dispatch", dispatch)
    first = _send("DescribeTable", {"TableName": name})
    assert _send("DescribeTable", {"TableName": name}) == first
    assert dispatched == ["DescribeTable"] and getattr(_table(name), KEPT) is not None
    _send("PutItem", {"TableName": name, "Item": {"pk": {"S": "a"}}})
    assert _send("DescribeTable", {"TableName": name})[1]["Table"]["ItemCount"] == 1
    assert dispatched == ["DescribeTable", "DescribeTable"]
