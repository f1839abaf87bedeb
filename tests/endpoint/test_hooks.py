"""Hooks: the engine calls them for validated data-plane requests, in order, with its clock;
a rejection writes nothing unless ``apply_first``; ``after`` sees units per (table, partition)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import start_endpoint
from labkit.endpoint import EmbeddedEndpoint, Rejection, RequestInfo
from tests.endpoint.clients import post, raw_client
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.tables import make_table


class Recorder:
    """Records every call; rejects with ``rejection`` when set."""

    def __init__(self, rejection: Rejection | None = None) -> None:
        self.rejection = rejection
        self.before_calls: list[tuple[RequestInfo, float]] = []
        self.after_calls: list[tuple[RequestInfo, dict[tuple[str, str], tuple[float, float]], float]] = []

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        self.before_calls.append((request, now))
        return self.rejection

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        self.after_calls.append((request, dict(consumed), now))


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock(500.0)


@pytest.fixture(scope="module")
def endpoint(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(clock=clock) as ep:
        yield ep


@pytest.fixture
def client(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url)


@pytest.fixture
def table(client: Any) -> str:
    return make_table(client)


@pytest.fixture
def hook(endpoint: EmbeddedEndpoint) -> Iterator[Recorder]:
    recorder = Recorder()
    endpoint.engine.add_hook(recorder)
    yield recorder
    endpoint.engine.remove_hook(recorder)


def _key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def test_hooks__put_item__before_and_after_see_the_partition_account_region_and_clock(
    client: Any, table: str, hook: Recorder, clock: FakeClock
) -> None:
    clock.now = 777.0
    client.put_item(TableName=table, Item={**_key("P1"), "n": {"N": "1"}})
    ((info, now),) = hook.before_calls
    assert (info.operation, info.account, info.region, now) == ("PutItem", "123456789012", "us-east-1", 777.0)
    assert (info.reads, info.writes) == ((), ((table, "P1"),))
    ((_, consumed, _),) = hook.after_calls
    assert consumed == {(table, "P1"): (0.0, 1.0)}


def test_hooks__get_item_and_query__reads_by_partition(client: Any, table: str, hook: Recorder) -> None:
    client.put_item(TableName=table, Item=_key("P2"))
    client.get_item(TableName=table, Key=_key("P2"), ConsistentRead=True)
    client.query(TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": "P2"}})
    get, query = hook.after_calls[1:]
    assert get[0].reads == ((table, "P2"),) and get[1] == {(table, "P2"): (1.0, 0.0)}
    assert query[0].reads == ((table, "P2"),) and query[1] == {(table, "P2"): (0.5, 0.0)}


def test_hooks__control_plane__never_seen(client: Any, hook: Recorder) -> None:
    client.list_tables()
    make_table(client)
    assert hook.before_calls == [] and hook.after_calls == []


def test_hooks__invalid_request__never_seen(client: Any, table: str, hook: Recorder) -> None:
    with pytest.raises(ClientError):
        client.put_item(TableName=table, Item={"PK": {"S": "only"}})
    assert hook.before_calls == []


def test_hooks__rejection__answered_with_its_code_and_extra_fields_and_nothing_written(
    endpoint: EmbeddedEndpoint, client: Any, table: str
) -> None:
    throttle = Recorder(Rejection("ThrottlingException", "slow down", extra={"ThrottlingReasons": [{"reason": "x"}]}))
    later = Recorder()
    endpoint.engine.add_hook(throttle)
    endpoint.engine.add_hook(later)
    try:
        with pytest.raises(ClientError) as caught:
            client.put_item(TableName=table, Item=_key("R"))
        status, body = post(
            endpoint.url, "DynamoDB_20120810.PutItem", json.dumps({"TableName": table, "Item": _key("R")}).encode()
        )
    finally:
        endpoint.engine.remove_hook(throttle)
        endpoint.engine.remove_hook(later)
    assert caught.value.response["Error"] == {"Code": "ThrottlingException", "Message": "slow down"}
    assert (status, body["ThrottlingReasons"]) == (400, [{"reason": "x"}])
    assert later.before_calls == []  # the first rejection wins
    assert throttle.after_calls == []
    assert "Item" not in client.get_item(TableName=table, Key=_key("R"))


def test_hooks__apply_first_rejection__writes_then_answers_the_error(
    endpoint: EmbeddedEndpoint, client: Any, table: str
) -> None:
    lost = Recorder(Rejection("InternalServerError", "response lost", status=500, apply_first=True))
    endpoint.engine.add_hook(lost)
    try:
        with pytest.raises(ClientError) as caught:
            client.update_item(
                TableName=table,
                Key=_key("L"),
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
    finally:
        endpoint.engine.remove_hook(lost)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert client.get_item(TableName=table, Key=_key("L"))["Item"]["n"] == {"N": "1"}  # applied exactly once


def test_table_tags__read_as_a_dict(endpoint: EmbeddedEndpoint, client: Any, table: str) -> None:
    arn = client.describe_table(TableName=table)["Table"]["TableArn"]
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "labkit-throttle", "Value": "on"}])
    assert endpoint.engine.table_tags("123456789012", "us-east-1", table) == {"labkit-throttle": "on"}
    assert endpoint.engine.table_tags("123456789012", "us-east-1", "labkit-no-such") == {}


class Choosy(Recorder):
    """A hook that wants only the requests that touch one partition key."""

    def __init__(self, pk: str) -> None:
        super().__init__()
        self.pk = pk

    def wants(self, request: RequestInfo) -> bool:
        return any(pk == self.pk for _, pk in (*request.reads, *request.writes))


def test_hooks__wants_false__never_called_for_that_request(client: Any, table: str, endpoint: EmbeddedEndpoint) -> None:
    """A hook with ``wants`` sees only what it wants (untagged tables are not metered for the throttle)."""
    choosy = Choosy("HOT")
    endpoint.engine.add_hook(choosy)
    try:
        client.put_item(TableName=table, Item=_key("COLD"))
        client.put_item(TableName=table, Item=_key("HOT"))
    finally:
        endpoint.engine.remove_hook(choosy)
    assert [info.writes for info, _ in choosy.before_calls] == [((table, "HOT"),)]
    assert [info.writes for info, _, _ in choosy.after_calls] == [((table, "HOT"),)]
