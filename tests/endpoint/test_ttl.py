"""Time to Live as DynamoDB does it (issue 42, item 3): expired items are served until the lab deletes them.

The developer guide, "Using time to live (TTL) in DynamoDB": "Items with valid, expired TTL attributes
may be deleted by the system at any time, typically within a few days of their expiration"; the
UpdateTimeToLive reference: "Items that have expired and not been deleted will still show up in reads,
queries, and scans." In the lab the deletion happens when the lab says (``Labkit.ExpireItems``), by
the engine's clock as epoch seconds (``DynamoEngine.epoch``, decision 143); moving the clock deletes
nothing (decision 143).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from labkit.embedded import DYNAMODB_LOCAL, build_engine, start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint
from labkit.endpoint.store.expiry import FIVE_YEARS_SECONDS, is_expired
from labkit.shared.catalogue import WEAK_ANSWER_HEADER, Op, WeakAnswer
from tests.endpoint.clients import code_of, engine_headers, post, raw_client, streams_client
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.tables import make_table

TTL = "expires"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(clock=FakeClock()) as ep:
        yield ep


@pytest.fixture
def engine(endpoint: EmbeddedEndpoint) -> DynamoEngine:
    return endpoint.engine


@pytest.fixture(scope="module")
def client(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url)


def ttl_table(client: Any, **kwargs: Any) -> str:
    """A fresh table PK (S) + SK (S) with TTL enabled on ``expires``."""
    name = make_table(client, **kwargs)
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"AttributeName": TTL, "Enabled": True})
    return name


def put(client: Any, table: str, pk: str, expires: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    item = {"PK": {"S": pk}, "SK": {"S": "A"}, **({TTL: expires} if expires is not None else {}), **extra}
    client.put_item(TableName=table, Item=item)
    return item


def at(seconds: float) -> dict[str, str]:
    """A TTL attribute value: epoch seconds as a DynamoDB Number."""
    return {"N": str(int(seconds))}


def control(endpoint: EmbeddedEndpoint, operation: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return post(endpoint.url, operation, json.dumps(params).encode())


def keys(items: list[dict[str, Any]]) -> list[str]:
    return sorted(item["PK"]["S"] for item in items)


# --- expired, not yet deleted ----------------------------------------------------------------


def test_expired_item__until_the_lab_deletes_it__getitem_query_scan_return_and_count_it(
    client: Any, engine: DynamoEngine
) -> None:
    """API reference, UpdateTimeToLive: "Items that have expired and not been deleted will still show up in reads,
    queries, and scans." GetItem, Query and Scan return it, and count it."""
    table = ttl_table(client)
    item = put(client, table, "session", at(engine.epoch() + 60))
    engine.advance_clock(3600)
    assert is_expired(item, TTL, engine.epoch())
    key = {"PK": {"S": "session"}, "SK": {"S": "A"}}
    assert client.get_item(TableName=table, Key=key)["Item"] == item
    query = client.query(
        TableName=table, KeyConditionExpression="PK = :pk", ExpressionAttributeValues={":pk": {"S": "session"}}
    )
    assert query["Items"] == [item] and query["Count"] == 1
    scan = client.scan(TableName=table)
    assert scan["Items"] == [item] and scan["Count"] == 1 == scan["ScannedCount"]
    assert client.scan(TableName=table, Select="COUNT")["Count"] == 1


def test_expired_item__filter_on_the_ttl_attribute__left_out_of_query_and_scan(
    client: Any, engine: DynamoEngine
) -> None:
    """Developer guide: "Use filter expressions to remove expired items from Scan and Query results"."""
    table = ttl_table(client)
    now = engine.epoch()
    put(client, table, "old", at(now + 10))
    put(client, table, "new", at(now + 7200))
    engine.advance_clock(600)
    lab_now = {":now": at(engine.epoch())}
    scan = client.scan(
        TableName=table,
        FilterExpression="#t > :now",
        ExpressionAttributeNames={"#t": TTL},
        ExpressionAttributeValues=lab_now,
    )
    assert keys(scan["Items"]) == ["new"] and scan["ScannedCount"] == 2


def test_expire_items__expired_items_deleted__live_ones_and_items_without_ttl_kept(
    client: Any, engine: DynamoEngine, endpoint: EmbeddedEndpoint
) -> None:
    """API reference: "If the epoch time value stored in the attribute is less than the current time, the item
    is marked as expired and subsequently deleted." Only those go, from the indexes too; the answer counts them."""
    table = ttl_table(client, gsi=True)
    now = engine.epoch()
    put(client, table, "expired", at(now - 1), email={"S": "a@example.com"})
    put(client, table, "live", at(now + 3600), email={"S": "b@example.com"})
    put(client, table, "forever", None, email={"S": "c@example.com"})
    status, described = control(endpoint, Op.DESCRIBE_EXPIRY, {"TableName": table})
    assert status == 200 and described["Expired"] == {table: 1}
    status, answer = control(endpoint, Op.EXPIRE_ITEMS, {"TableName": table})
    assert status == 200 and answer["Deleted"] == {table: 1} and answer["Count"] == 1
    assert answer["Epoch"] >= now
    assert keys(client.scan(TableName=table)["Items"]) == ["forever", "live"]
    gsi = client.scan(TableName=table, IndexName="email-index")["Items"]  # "removed from ... global secondary indexes"
    assert keys(gsi) == ["forever", "live"]
    assert control(endpoint, Op.EXPIRE_ITEMS, {"TableName": table})[1]["Count"] == 0  # nothing left to delete


def test_expire_items__ttl_not_a_top_level_number__item_ignored(client: Any, engine: DynamoEngine) -> None:
    """Developer guide: "The TTL attribute's value must be a top-level Number data type ... if ... the attribute
    on an item is a String data type, the TTL processes ignore the item"; so does an item without it."""
    table = ttl_table(client)
    past = str(int(engine.epoch()) - 60)
    put(client, table, "string", {"S": past})
    put(client, table, "set", {"NS": [past]})
    put(client, table, "nested", None, wrapper={"M": {TTL: {"N": past}}})
    put(client, table, "absent", None)
    assert engine.expire_items(table) == {table: 0}
    assert len(client.scan(TableName=table)["Items"]) == 4


def test_expire_items__ttl_more_than_five_years_past__item_kept(client: Any, engine: DynamoEngine) -> None:
    """Developer guide: "The TTL attribute value must be a datetimestamp with an expiration of no more than five
    years in the past ... the TTL processes will not expire that item." Nor one in milliseconds (the future)."""
    table = ttl_table(client)
    now = engine.epoch()
    put(client, table, "ancient", at(now - FIVE_YEARS_SECONDS - 86400))
    put(client, table, "four-years", at(now - FIVE_YEARS_SECONDS + 86400 * 365))
    put(client, table, "milliseconds", at((now - 60) * 1000))
    assert engine.expire_items(table) == {table: 1}
    assert keys(client.scan(TableName=table)["Items"]) == ["ancient", "milliseconds"]


def test_expired_item__updated_to_a_later_ttl_before_deletion__not_deleted(client: Any, engine: DynamoEngine) -> None:
    """Developer guide: "You can still update the expired items that are pending deletion, including changing
    or removing their TTL attributes": a later TTL keeps the item."""
    table = ttl_table(client)
    put(client, table, "renewed", at(engine.epoch() + 5))
    engine.advance_clock(60)
    client.update_item(
        TableName=table,
        Key={"PK": {"S": "renewed"}, "SK": {"S": "A"}},
        UpdateExpression="SET #t = :later",
        ExpressionAttributeNames={"#t": TTL},
        ExpressionAttributeValues={":later": at(engine.epoch() + 3600)},
    )
    assert engine.expire_items(table) == {table: 0}
    assert len(client.scan(TableName=table)["Items"]) == 1


def test_expire_items__ttl_disabled__nothing_deleted(client: Any, engine: DynamoEngine) -> None:
    """With TTL off (never enabled, or disabled) no item is expired: the TTL process looks at tables with TTL on."""
    plain = make_table(client)
    put(client, plain, "x", at(engine.epoch() - 60))
    table = ttl_table(client)
    put(client, table, "y", at(engine.epoch() - 60))
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"AttributeName": TTL, "Enabled": False})
    assert engine.expired(plain) == {} and engine.expire_items(table) == {}
    assert len(client.scan(TableName=plain)["Items"]) == 1 == len(client.scan(TableName=table)["Items"])


def test_advance_clock__far_past_expiry__deletes_nothing_until_the_lab_expires_items(
    client: Any, engine: DynamoEngine, endpoint: EmbeddedEndpoint
) -> None:
    """DynamoDB gives no deadline ("typically within a few days"): moving the clock, even by a week, deletes
    nothing; Labkit.ExpireItems does (decision 143)."""
    table = ttl_table(client)
    put(client, table, "s", at(engine.epoch() + 1))
    assert control(endpoint, Op.ADVANCE_CLOCK, {"Seconds": 7 * 86400})[0] == 200
    assert len(client.scan(TableName=table)["Items"]) == 1
    assert control(endpoint, Op.EXPIRE_ITEMS, {})[1]["Deleted"][table] == 1
    assert client.scan(TableName=table)["Items"] == []


# --- the deletion is a service delete --------------------------------------------------------


def test_expire_items__stream_on__remove_record_carries_dynamodb_s_service_identity(
    client: Any, engine: DynamoEngine, endpoint: EmbeddedEndpoint
) -> None:
    """Developer guide, "DynamoDB Streams and Time to Live": "Items that are deleted by the Time to Live process
    after expiration have the following fields: Records[<index>].userIdentity.type "Service",
    Records[<index>].userIdentity.principalId "dynamodb.amazonaws.com"" (GetRecords' Identity shape: Type,
    PrincipalId). A user's DeleteItem has no userIdentity; the TTL REMOVE keeps the old image."""
    table = ttl_table(client, stream=True)
    expired = put(client, table, "expired", at(engine.epoch() - 60))
    put(client, table, "mine", None)
    client.delete_item(TableName=table, Key={"PK": {"S": "mine"}, "SK": {"S": "A"}})
    engine.expire_items(table)
    streams = streams_client(endpoint.url)
    arn = streams.list_streams(TableName=table)["Streams"][0]["StreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    assert [r["eventName"] for r in records] == ["INSERT", "INSERT", "REMOVE", "REMOVE"]
    user_delete, ttl_delete = records[2], records[3]
    assert "userIdentity" not in user_delete
    assert ttl_delete["userIdentity"] == {"Type": "Service", "PrincipalId": "dynamodb.amazonaws.com"}
    assert ttl_delete["dynamodb"]["Keys"] == {"PK": {"S": "expired"}, "SK": {"S": "A"}}
    assert ttl_delete["dynamodb"]["OldImage"] == expired


def test_expire_items__an_eventually_consistent_read_after__may_still_see_the_item(
    endpoint: EmbeddedEndpoint, engine: DynamoEngine
) -> None:
    """Developer guide: deleted items "are removed from local secondary indexes and global secondary indexes just like
    other delete operations"; the API reference: "in the same eventually consistent way as a standard delete
    operation": a stale read just after the deletion answers the item; a strongly consistent one does not."""
    client = raw_client(endpoint.url)
    table = ttl_table(client)
    item = put(client, table, "gone", at(engine.epoch() - 60))
    assert engine.history is not None
    engine.history.clear()  # settled: only the deletion is kept
    engine.expire_items(table)
    key = {"PK": {"S": "gone"}, "SK": {"S": "A"}}

    def stale(request: Any, **_: Any) -> None:
        request.headers[WEAK_ANSWER_HEADER] = WeakAnswer.STALE_READ.value

    client.meta.events.register("before-sign.dynamodb.GetItem", stale)
    answer = client.get_item(TableName=table, Key=key)
    assert answer["Item"] == item
    assert answer["ResponseMetadata"]["HTTPHeaders"][WEAK_ANSWER_HEADER.lower()] == WeakAnswer.STALE_READ.value
    client.meta.events.unregister("before-sign.dynamodb.GetItem", stale)
    assert "Item" not in client.get_item(TableName=table, Key=key, ConsistentRead=True)


# --- the lab's epoch -------------------------------------------------------------------------


def test_epoch__the_wall_clock_at_start_plus_the_engine_s_clock_since__advances_included() -> None:
    """TTL compares with epoch seconds, the engine's clock is monotonic: epoch = origin + now() (decision 143)."""
    clock = FakeClock(50.0)
    engine = build_engine(clock=clock)
    try:
        start = engine.epoch()
        clock.now += 10
        engine.advance_clock(90)
        assert engine.epoch() - start == pytest.approx(100.0)
        assert engine.epoch() == pytest.approx(engine.epoch_origin + engine.now())
    finally:
        engine.close()


# --- bad input, other profiles ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "params", "code", "words"),
    [
        (Op.EXPIRE_ITEMS, {"Table": "x"}, "ValidationException", "unknown parameter(s) 'Table'; it takes TableName"),
        (Op.EXPIRE_ITEMS, {"TableName": 7}, "ValidationException", "TableName must be a table's name, not 7"),
        (
            Op.EXPIRE_ITEMS,
            {"TableName": "no-such-table"},
            "ResourceNotFoundException",
            "Table: no-such-table not found",
        ),
        (Op.DESCRIBE_EXPIRY, {"TableName": ""}, "ValidationException", "TableName must be a table's name"),
    ],
)
def test_ttl_controls__bad_parameters__400_naming_the_problem_nothing_deleted(
    endpoint: EmbeddedEndpoint, client: Any, engine: DynamoEngine, operation: str, params: Any, code: str, words: str
) -> None:
    """A bad control request is a 400 saying what is wrong, never a 500; nothing is deleted."""
    table = ttl_table(client)
    put(client, table, "expired", at(engine.epoch() - 60))
    status, payload = control(endpoint, operation, params)
    assert status == 400 and code_of(payload) == code and words in payload["message"], payload
    assert payload["message"].startswith(operation)
    assert len(client.scan(TableName=table)["Items"]) == 1
    status, payload = post(endpoint.url, Op.EXPIRE_ITEMS, b"[1]")
    assert status == 400 and code_of(payload) == "SerializationException"


def test_profile_dynamodb_local__update_ttl_accepted__ttl_controls_unknown_operations() -> None:
    """DynamoDB Local takes UpdateTimeToLive, but "TTL is currently not supported on DynamoDB local" (its usage
    notes): the profile deletes nothing and answers Labkit.ExpireItems as an unknown operation."""
    engine = build_engine(DYNAMODB_LOCAL)
    try:
        create = {
            "TableName": "ttl-local",
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        }
        spec = {"TableName": "ttl-local", "TimeToLiveSpecification": {"AttributeName": TTL, "Enabled": True}}
        for operation, params in (("CreateTable", create), ("UpdateTimeToLive", spec)):
            status, _, body = engine.handle(engine_headers(operation), json.dumps(params).encode())
            assert status == 200, body
        for operation in (Op.EXPIRE_ITEMS, Op.DESCRIBE_EXPIRY):
            headers = {**engine_headers("X"), "x-amz-target": operation}
            status, _, body = engine.handle(headers, b"{}")
            assert status == 400 and json.loads(body)["__type"].endswith("UnknownOperationException")
    finally:
        engine.close()
