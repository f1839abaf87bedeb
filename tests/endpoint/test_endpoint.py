"""The embedded endpoint: atomic requests, ClientRequestToken, ConsumedCapacity, validation, socket.

Every test runs against one endpoint started by this module, whose engine has a
fake clock, with a fresh table per test. Race tests set a tiny thread switch
interval so that a missing lock would show.
"""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

import labkit
from labkit import constants as C
from labkit.backend import Connection
from labkit.embedded import build_engine, start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint

ROUNDS = 3
THREADS = 16


class FakeClock:
    """A monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def endpoint(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    """One endpoint for this module, its engine on the fake clock."""
    with start_endpoint(clock=clock) as ep:
        yield ep


@pytest.fixture
def lab(endpoint: EmbeddedEndpoint) -> Iterator[Connection]:
    """A connection to the module's endpoint whose table is fresh and empty."""
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


def _key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _code(exc: ClientError) -> str:
    return str(exc.response["Error"]["Code"])


def _run_threads(target: Callable[[int], None], n: int = THREADS) -> None:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"


def _count(lab: Connection) -> int:
    return int(lab.client.scan(TableName=lab.table_name, Select="COUNT")["Count"])


# --- atomicity -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "round_",
    [0, *(pytest.param(n, marks=pytest.mark.slow) for n in range(1, ROUNDS))],  # repeats: slow
)
def test_atomic__16_threads_conditional_increments__final_value_equals_successes(
    lab: Connection, racy: None, round_: int
) -> None:
    """Read-then-conditional-update from 16 clients never loses an update."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**_key("COUNTER"), "n": {"N": "0"}})
    successes = [0] * THREADS
    conflicts = [0] * THREADS
    start = threading.Barrier(THREADS)

    def worker(i: int) -> None:
        own = lab.new_client()
        start.wait()
        for _ in range(30):
            item = own.get_item(TableName=lab.table_name, Key=_key("COUNTER"), ConsistentRead=True)
            old = item["Item"]["n"]["N"]
            try:
                own.update_item(
                    TableName=lab.table_name,
                    Key=_key("COUNTER"),
                    UpdateExpression="SET n = :new",
                    ConditionExpression="n = :old",
                    ExpressionAttributeValues={
                        ":old": {"N": old},
                        ":new": {"N": str(int(old) + 1)},
                    },
                )
                successes[i] += 1
            except ClientError as exc:
                assert _code(exc) == "ConditionalCheckFailedException"
                conflicts[i] += 1  # retried by the next attempt, which re-reads

    _run_threads(worker)
    final = client.get_item(TableName=lab.table_name, Key=_key("COUNTER"), ConsistentRead=True)
    assert int(final["Item"]["n"]["N"]) == sum(successes)
    assert sum(conflicts) > 0, "no conflicting update happened: the race was not exercised"


@pytest.mark.parametrize(
    "round_",
    [0, *(pytest.param(n, marks=pytest.mark.slow) for n in range(1, ROUNDS))],  # repeats: slow
)
def test_atomic__16_concurrent_registrations_of_one_email__exactly_one_winner_no_leftovers(
    lab: Connection, racy: None, round_: int
) -> None:
    """16 transactions claim one email: one wins, the 15 losers leave no item behind."""
    email = f"ada-{round_}@example.com"
    outcomes: list[str] = [""] * THREADS
    start = threading.Barrier(THREADS)

    def register(i: int) -> None:
        own: Any = lab.new_client()
        guard = {"ConditionExpression": "attribute_not_exists(PK)"}
        start.wait()
        try:
            own.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": lab.table_name, "Item": _key(f"USER#{i}"), **guard}},
                    {"Put": {"TableName": lab.table_name, "Item": _key(f"EMAIL#{email}"), **guard}},
                ]
            )
            outcomes[i] = "won"
        except ClientError as exc:
            outcomes[i] = _code(exc)

    _run_threads(register)
    assert outcomes.count("won") == 1
    assert set(outcomes) == {"won", "TransactionCanceledException"}
    winner = outcomes.index("won")
    items = lab.client.scan(TableName=lab.table_name)["Items"]
    assert sorted(i["PK"]["S"] for i in items) == sorted([f"EMAIL#{email}", f"USER#{winner}"])


def test_atomic__transaction_whose_later_write_fails__undoes_its_earlier_writes(
    lab: Connection,
) -> None:
    """A write that fails while applying (not a condition) rolls back the writes before it."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**_key("TEXT"), "n": {"S": "not a number"}})
    with pytest.raises(ClientError):
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": lab.table_name, "Item": {**_key("NEW"), "v": {"N": "1"}}}},
                {
                    "Update": {
                        "TableName": lab.table_name,
                        "Key": _key("TEXT"),
                        "UpdateExpression": "SET n = n + :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        )
    assert "Item" not in client.get_item(TableName=lab.table_name, Key=_key("NEW"))
    text = client.get_item(TableName=lab.table_name, Key=_key("TEXT"))["Item"]
    assert text["n"] == {"S": "not a number"}


def test_atomic__update_failing_half_way__leaves_the_item_unchanged(lab: Connection) -> None:
    """moto applies `SET a` before `ADD s` fails on a string; the endpoint undoes it."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**_key("HALF"), "s": {"S": "text"}})
    with pytest.raises(ClientError) as caught:
        client.update_item(
            TableName=lab.table_name,
            Key=_key("HALF"),
            UpdateExpression="SET a = :v ADD s :v",
            ExpressionAttributeValues={":v": {"N": "1"}},
        )
    assert _code(caught.value) == "ValidationException"
    item = client.get_item(TableName=lab.table_name, Key=_key("HALF"))["Item"]
    assert item == {**_key("HALF"), "s": {"S": "text"}}


def test_atomic__cancelled_transaction__reports_reasons_in_request_order_and_writes_nothing(
    lab: Connection,
) -> None:
    """A failed condition cancels the whole transaction, with one reason per action."""
    client: Any = lab.client
    client.put_item(TableName=lab.table_name, Item={**_key("TAKEN"), "who": {"S": "ada"}})
    guard = {"ConditionExpression": "attribute_not_exists(PK)"}
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": lab.table_name, "Item": _key("FREE"), **guard}},
                {
                    "Put": {
                        "TableName": lab.table_name,
                        "Item": _key("TAKEN"),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        **guard,
                    }
                },
            ]
        )
    reasons: Any = caught.value.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"]["who"] == {"S": "ada"}
    assert _count(lab) == 1


# --- ClientRequestToken -----------------------------------------------------------------------


def _increment(lab: Connection, token: str, amount: str = "1", **extra: Any) -> dict[str, Any]:
    return lab.client.transact_write_items(  # type: ignore[return-value]
        TransactItems=[
            {
                "Update": {
                    "TableName": lab.table_name,
                    "Key": _key("COUNTER"),
                    "UpdateExpression": "ADD n :d",
                    "ExpressionAttributeValues": {":d": {"N": amount}},
                }
            }
        ],
        ClientRequestToken=token,
        **extra,
    )


def _counter(lab: Connection) -> int:
    item = lab.client.get_item(TableName=lab.table_name, Key=_key("COUNTER"), ConsistentRead=True)
    return int(item["Item"]["n"]["N"])


def test_client_request_token__repeated_within_ttl__succeeds_and_applies_once(
    lab: Connection,
) -> None:
    """The same TransactWriteItems with the same token is applied once, and both calls succeed."""
    first = _increment(lab, "token-once")
    again = _increment(lab, "token-once")
    assert first["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert again["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert _counter(lab) == 1


def test_client_request_token__repeated__reports_read_units_not_write_units(
    lab: Connection,
) -> None:
    """As DynamoDB documents: the repeat reports the read units of reading the item."""
    first = _increment(lab, "token-units", ReturnConsumedCapacity="TOTAL")
    again = _increment(lab, "token-units", ReturnConsumedCapacity="TOTAL")
    assert first["ConsumedCapacity"][0]["WriteCapacityUnits"] == 2.0
    assert again["ConsumedCapacity"] == [{"TableName": lab.table_name, "CapacityUnits": 1.0, "ReadCapacityUnits": 1.0}]


def test_client_request_token__same_token_different_request__idempotent_parameter_mismatch(
    lab: Connection,
) -> None:
    """Reusing a token for a different request fails with HTTP 400 and changes nothing."""
    _increment(lab, "token-mismatch")
    with pytest.raises(ClientError) as caught:
        _increment(lab, "token-mismatch", amount="5")
    assert _code(caught.value) == "IdempotentParameterMismatchException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert _counter(lab) == 1


def test_client_request_token__after_ttl__is_a_new_request(lab: Connection, clock: FakeClock) -> None:
    """After 10 minutes (by the engine's clock) the same token applies again."""
    _increment(lab, "token-expiry")
    clock.now += C.CLIENT_REQUEST_TOKEN_TTL_SECONDS - 1
    _increment(lab, "token-expiry")
    assert _counter(lab) == 1
    clock.now += 1
    _increment(lab, "token-expiry")
    assert _counter(lab) == 2


def test_client_request_token__mismatch_error__has_dynamodb_json_shape() -> None:
    """The error body is DynamoDB's: namespaced __type and a lower-case message."""
    engine = build_engine()
    headers = _headers("TransactWriteItems")
    name = f"labkit-raw-{uuid.uuid4().hex[:8]}"
    engine.handle(_headers("CreateTable"), json.dumps(_table_request(name)).encode())
    put = {"Put": {"TableName": name, "Item": _key("X")}}
    first = {"TransactItems": [put], "ClientRequestToken": "raw-token"}
    other = {
        "TransactItems": [put, {"Put": {"TableName": name, "Item": _key("Y")}}],
        "ClientRequestToken": "raw-token",
    }
    assert engine.handle(headers, json.dumps(first).encode())[0] == 200
    status, _, body = engine.handle(headers, json.dumps(other).encode())
    payload = json.loads(body)
    assert status == 400
    assert payload["__type"] == "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException"
    assert "new token" in payload["message"]


# --- ConsumedCapacity -------------------------------------------------------------------------


def _filler(n_bytes: int) -> dict[str, Any]:
    return {"x_pad": {"S": "x" * n_bytes}}


@pytest.mark.parametrize(
    ("size", "consistent", "units"),
    [(100, False, 0.5), (100, True, 1.0), (9000, False, 1.5), (9000, True, 3.0)],
)
def test_consumed_capacity__get_item__4kb_read_steps_on_the_whole_item(
    lab: Connection, size: int, consistent: bool, units: float
) -> None:
    """GetItem: ceil(size / 4 KB) units, halved when eventually consistent."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**_key("BIG"), **_filler(size)})
    got = client.get_item(
        TableName=lab.table_name,
        Key=_key("BIG"),
        ConsistentRead=consistent,
        ProjectionExpression="PK",
        ReturnConsumedCapacity="TOTAL",
    )
    assert got["ConsumedCapacity"] == {
        "TableName": lab.table_name,
        "CapacityUnits": units,
        "ReadCapacityUnits": units,
    }


def test_consumed_capacity__get_item_missing__costs_the_minimum(lab: Connection) -> None:
    """A GetItem that finds nothing still costs 0.5 units (eventually consistent)."""
    got = lab.client.get_item(TableName=lab.table_name, Key=_key("NOPE"), ReturnConsumedCapacity="TOTAL")
    assert got["ConsumedCapacity"]["CapacityUnits"] == 0.5


def test_consumed_capacity__not_requested__is_absent(lab: Connection) -> None:
    """Without ReturnConsumedCapacity no capacity is reported (moto reports a made-up one)."""
    updated = lab.client.update_item(
        TableName=lab.table_name,
        Key=_key("X"),
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    assert "ConsumedCapacity" not in updated


def test_consumed_capacity__writes__1kb_steps_on_the_larger_of_old_and_new(
    lab: Connection,
) -> None:
    """Put 2.5 KB: 3 units; shrinking it to a few bytes still costs 3; deleting the small one 1."""
    client, table = lab.client, lab.table_name
    put = client.put_item(TableName=table, Item={**_key("W"), **_filler(2500)}, ReturnConsumedCapacity="TOTAL")
    shrink = client.update_item(
        TableName=table,
        Key=_key("W"),
        UpdateExpression="REMOVE x_pad",
        ReturnConsumedCapacity="TOTAL",
    )
    delete = client.delete_item(TableName=table, Key=_key("W"), ReturnConsumedCapacity="TOTAL")
    assert [r["ConsumedCapacity"]["WriteCapacityUnits"] for r in (put, shrink, delete)] == [
        3.0,
        3.0,
        1.0,
    ]


def test_consumed_capacity__write_with_gsi_attribute__also_writes_the_index(
    lab: Connection,
) -> None:
    """An item carrying `email` lands in email-index too: INDEXES shows both writes."""
    put = lab.client.put_item(
        TableName=lab.table_name,
        Item={**_key("U"), "email": {"S": "ada@example.com"}},
        ReturnConsumedCapacity="INDEXES",
    )
    assert put["ConsumedCapacity"] == {
        "TableName": lab.table_name,
        "CapacityUnits": 2.0,
        "WriteCapacityUnits": 2.0,
        "Table": {"CapacityUnits": 1.0, "WriteCapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {C.EMAIL_INDEX_NAME: {"CapacityUnits": 1.0, "WriteCapacityUnits": 1.0}},
    }


def test_consumed_capacity__transact_write__twice_the_units_per_item(lab: Connection) -> None:
    """Two 1.5 KB puts in a transaction: 2 x 2 units each = 8; a ConditionCheck reads 2."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=_key("CHECKED"))
    result = client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {**_key("T1"), **_filler(1500)}}},
            {"Put": {"TableName": table, "Item": {**_key("T2"), **_filler(1500)}}},
            {
                "ConditionCheck": {
                    "TableName": table,
                    "Key": _key("CHECKED"),
                    "ConditionExpression": "attribute_exists(PK)",
                }
            },
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert result["ConsumedCapacity"] == [
        {
            "TableName": table,
            "CapacityUnits": 10.0,
            "ReadCapacityUnits": 2.0,
            "WriteCapacityUnits": 8.0,
        }
    ]


def test_consumed_capacity__transact_get__twice_the_strong_read_units(lab: Connection) -> None:
    """TransactGetItems: 2 x 1 unit per small item."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=_key("G1"))
    result = client.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": table, "Key": _key("G1")}},
            {"Get": {"TableName": table, "Key": _key("G2")}},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert result["ConsumedCapacity"][0]["CapacityUnits"] == 4.0


def test_consumed_capacity__query__total_size_read_before_the_filter(lab: Connection) -> None:
    """Query reads three 2 KB items (6 KB): 2 units strong, even when the filter drops them all."""
    client, table = lab.client, lab.table_name
    for sk in ("1", "2", "3"):
        client.put_item(TableName=table, Item={**_key("Q", sk), **_filler(2000)})
    result = client.query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        FilterExpression="attribute_exists(nope)",
        ExpressionAttributeValues={":pk": {"S": "Q"}},
        ConsistentRead=True,
        ReturnConsumedCapacity="TOTAL",
    )
    assert (result["Count"], result["ScannedCount"]) == (0, 3)
    assert result["ConsumedCapacity"]["CapacityUnits"] == 2.0


def test_consumed_capacity__batch_get__per_item_per_table(lab: Connection) -> None:
    """BatchGetItem: each item rounded up on its own (two small items = 2 x 0.5)."""
    client, table = lab.client, lab.table_name
    client.put_item(TableName=table, Item=_key("B1"))
    client.put_item(TableName=table, Item=_key("B2"))
    result = client.batch_get_item(
        RequestItems={table: {"Keys": [_key("B1"), _key("B2")]}}, ReturnConsumedCapacity="TOTAL"
    )
    assert result["ConsumedCapacity"] == [{"TableName": table, "CapacityUnits": 1.0, "ReadCapacityUnits": 1.0}]


# --- validation -------------------------------------------------------------------------------


def test_validation__unused_expression_attribute_value__rejected_and_nothing_written(
    lab: Connection,
) -> None:
    """PutItem with a value no expression uses: ValidationException naming the key."""
    with pytest.raises(ClientError) as caught:
        lab.client.put_item(
            TableName=lab.table_name,
            Item=_key("V"),
            ConditionExpression="attribute_not_exists(PK)",
            ExpressionAttributeValues={":x": {"S": "unused"}},
        )
    assert _code(caught.value) == "ValidationException"
    assert caught.value.response["Error"]["Message"] == (
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}"
    )
    assert _count(lab) == 0


def test_validation__unused_expression_attribute_name__rejected(lab: Connection) -> None:
    """UpdateItem with a name no expression uses: ValidationException naming the key."""
    with pytest.raises(ClientError) as caught:
        lab.client.update_item(
            TableName=lab.table_name,
            Key=_key("V"),
            UpdateExpression="SET v = :v",
            ExpressionAttributeNames={"#x": "x"},
            ExpressionAttributeValues={":v": {"N": "1"}},
        )
    assert caught.value.response["Error"]["Message"] == (
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}"
    )


def test_validation__unused_value_inside_a_transaction_action__rejects_the_transaction(
    lab: Connection,
) -> None:
    """Each TransactWriteItems action is checked on its own; nothing of the transaction lands."""
    table = lab.table_name
    with pytest.raises(ClientError) as caught:
        lab.client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": _key("OK")}},
                {
                    "Put": {
                        "TableName": table,
                        "Item": _key("BAD"),
                        "ConditionExpression": "attribute_not_exists(PK)",
                        "ExpressionAttributeValues": {":unused": {"N": "1"}},
                    }
                },
            ]
        )
    assert _code(caught.value) == "ValidationException"
    assert "keys: {:unused}" in caught.value.response["Error"]["Message"]
    assert _count(lab) == 0


@pytest.mark.parametrize("n_items", [0, C.MAX_TRANSACT_ITEMS + 1])
def test_validation__transaction_with_no_or_too_many_items__validation_exception(lab: Connection, n_items: int) -> None:
    """0 or 101 actions: ValidationException (botocore's own check switched off to reach us)."""
    client: Any = lab.new_client(parameter_validation=False)
    items = [{"Put": {"TableName": lab.table_name, "Item": _key(f"I{i}")}} for i in range(n_items)]
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(TransactItems=items)
    assert _code(caught.value) == "ValidationException"
    assert "transactItems" in caught.value.response["Error"]["Message"]
    assert _count(lab) == 0


# --- fast path agrees with moto ---------------------------------------------------------------


def _headers(operation: str) -> dict[str, str]:
    return {
        "x-amz-target": f"DynamoDB_20120810.{operation}",
        "content-type": "application/x-amz-json-1.0",
        "authorization": "AWS4-HMAC-SHA256 Credential=labkit/20260101/us-east-1/dynamodb/"
        "aws4_request, SignedHeaders=host, Signature=0",
    }


def _table_request(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
    }


SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("PutItem", {"Item": {**_key("A"), "n": {"N": "1"}, "m": {"M": {"x": {"L": [{"S": "y"}]}}}}}),
    ("GetItem", {"Key": _key("A")}),
    ("GetItem", {"Key": _key("missing")}),
    (
        "GetItem",
        {"Key": _key("A"), "ProjectionExpression": "#n", "ExpressionAttributeNames": {"#n": "n"}},
    ),
    (
        "PutItem",
        {
            "Item": _key("A"),
            "ConditionExpression": "attribute_not_exists(PK)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    (
        "UpdateItem",
        {
            "Key": _key("A"),
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "UpdateItem",
        {
            "Key": _key("A"),
            "UpdateExpression": "SET n = :v",
            "ConditionExpression": "n = :old",
            "ExpressionAttributeValues": {":v": {"N": "9"}, ":old": {"N": "0"}},
        },
    ),
    (
        "UpdateItem",
        {
            "Key": _key("A"),
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
                        "Item": _key("A"),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                }
            ]
        },
    ),
    ("DeleteItem", {"Key": _key("A"), "ReturnValues": "ALL_OLD"}),
    ("GetItem", {"TableName": "labkit-no-such-table", "Key": _key("A")}),
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
    from labkit.endpoint import apply
    from labkit.endpoint.decode import decode
    from labkit.endpoint.encode import ClientFault, fault_response, response
    from labkit.endpoint.validate import validate

    store = DynamoEngine().store
    fast_table, moto_table = (f"labkit-cmp-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for table in (fast_table, moto_table):
        body = json.dumps(_table_request(table)).encode()
        store.dispatch(decode(_headers("CreateTable"), body, store.account_of))
    fast_operations = dict(apply.FAST_OPERATIONS)
    for operation, request in SCRIPT:
        answers = []
        for table, fast in ((fast_table, True), (moto_table, False)):
            monkeypatch.setattr(apply, "FAST_OPERATIONS", fast_operations if fast else {})
            params = json.loads(json.dumps({"TableName": table, **request}).replace("$T", table))
            decoded = decode(_headers(operation), json.dumps(params).encode(), store.account_of)
            try:
                plan = validate(decoded, functools.partial(store.schema, decoded.account, decoded.region))
                status, _, out = response(200, store.apply(decoded, plan, track=False).payload)
            except ClientFault as fault:
                status, _, out = fault_response(fault)
            answers.append((status, _normalise(out, table)))
        assert answers[0] == answers[1], f"{operation} {request}"


def test_fast_path__binary_values__round_trip_through_both_paths(lab: Connection) -> None:
    """Binary attributes (written by moto's full path) read back as the same bytes."""
    client = lab.client
    raw = bytes(range(256))
    item = {**_key("BIN"), "b": {"B": raw}, "bs": {"BS": [b"\x00", b"\xff"]}}
    client.put_item(TableName=lab.table_name, Item=item)
    got = client.get_item(TableName=lab.table_name, Key=_key("BIN"))["Item"]
    queried = client.query(
        TableName=lab.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "BIN"}},
    )["Items"]
    assert got["b"] == {"B": raw}
    assert sorted(got["bs"]["BS"]) == [b"\x00", b"\xff"]
    assert queried == [got]


# --- the socket -------------------------------------------------------------------------------


def test_socket__listens_on_loopback_only(endpoint: EmbeddedEndpoint) -> None:
    """The bound socket's address is 127.0.0.1."""
    assert endpoint.address == ("127.0.0.1", endpoint.port)


def test_socket__any_other_host__configuration_error() -> None:
    """Asking for 0.0.0.0 is refused before anything is bound."""
    with pytest.raises(labkit.ConfigurationError, match="127.0.0.1 only"):
        start_endpoint(host="0.0.0.0")


def test_socket__port_in_use__backend_unavailable_saying_what_to_do() -> None:
    """A taken port raises BackendUnavailable that names the port and suggests another."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(labkit.BackendUnavailable) as caught:
            start_endpoint(port)
    assert f"port {port}" in str(caught.value)
    assert "choose another port" in str(caught.value)


def test_socket__another_process_with_a_plain_boto3_client__lists_tables(
    endpoint: EmbeddedEndpoint, lab: Connection
) -> None:
    """Like `aws dynamodb list-tables --endpoint-url ...`: a separate process sees the tables."""
    code = (
        "import boto3, sys; c = boto3.client('dynamodb', endpoint_url=sys.argv[1], "
        "region_name='us-east-1', aws_access_key_id='x', aws_secret_access_key='y'); "
        "print(' '.join(c.list_tables()['TableNames']))"
    )
    out = subprocess.run([sys.executable, "-c", code, endpoint.url], capture_output=True, text=True, timeout=60)
    assert lab.table_name in out.stdout.split(), out.stderr
