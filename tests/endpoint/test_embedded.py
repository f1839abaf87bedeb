"""The composition root (labkit/embedded/__init__.py): the profiles' engines, over real HTTP, and the
engine's public API its plug-ins use (clock, hooks, controls, generation)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import DYNAMODB_LOCAL, LABKIT, PROFILES, build_engine, shared_endpoint, start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint, Rejection, RequestInfo
from labkit.engine_plugins.faults import (
    CONTROL_OPERATIONS,
    FaultInjector,
    FaultRules,
    advance_clock,
    set_endpoint_faults,
)
from labkit.engine_plugins.throughput import PartitionThrottle, set_partition_scale
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.errors import ConfigurationError, ValidationError
from tests.endpoint.clients import post, raw_client
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.tables import hot_write, make_table


class Seen:
    """A hook that records the ``now`` it is called with."""

    def __init__(self) -> None:
        self.now: list[float] = []

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        self.now.append(now)
        return None

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        return None


@pytest.fixture(scope="module")
def labkit_ep() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(profile=LABKIT, clock=FakeClock(100.0)) as ep:
        yield ep


@pytest.fixture(scope="module")
def local_ep() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(profile=DYNAMODB_LOCAL, clock=FakeClock(100.0)) as ep:
        yield ep


# --- what each profile builds -------------------------------------------------------------------
def test_build_engine__labkit__throttle_then_injector_and_every_control() -> None:
    """The labkit profile: the tag-only partition throttle, then the fault injector, and the
    Labkit.* controls the client side knows (CONTROL_OPERATIONS)."""
    engine = build_engine()
    throttle, injector = engine.hooks
    assert isinstance(throttle, PartitionThrottle) and throttle.scale is None
    assert isinstance(injector, FaultInjector) and injector.rules == FaultRules()
    assert set(engine.controls) == {f"Labkit.{op}" for op in CONTROL_OPERATIONS}


def test_build_engine__dynamodb_local__no_hook_no_control() -> None:
    """The dynamodb-local profile is the engine core alone."""
    engine = build_engine(DYNAMODB_LOCAL)
    assert (engine.hooks, dict(engine.controls)) == ((), {})


def test_engine_core__built_directly__has_no_defaults() -> None:
    """DynamoEngine() imports no plug-in and starts with none: defaults come from the root only."""
    engine = DynamoEngine()
    assert (engine.hooks, dict(engine.controls)) == ((), {})


def test_build_engine__faults__first_rules_of_its_injector() -> None:
    """`labkit serve --faults` rules go to the one injector the root installs."""
    rules = FaultRules.parse([{"operation": "PutItem", "error": "ThrottlingException"}])
    (injector,) = [h for h in build_engine(faults=rules).hooks if isinstance(h, FaultInjector)]
    assert injector.rules == rules


def test_build_engine__unknown_profile__validation_error_naming_the_profiles() -> None:
    with pytest.raises(ValidationError, match="unknown profile 'dynamo'; choose one of: labkit, dynamodb-local"):
        build_engine("dynamo")
    assert list(PROFILES) == [LABKIT, DYNAMODB_LOCAL]


def test_build_engine__dynamodb_local_with_faults__configuration_error() -> None:
    """Fault rules need an injector; the dynamodb-local profile has none, so it says so."""
    with pytest.raises(ConfigurationError, match="no fault injector"):
        build_engine(DYNAMODB_LOCAL, faults=FaultRules())


def test_start_endpoint__engine_and_profile__configuration_error() -> None:
    """An engine given, plus options to build another, is ambiguous: refused before listening."""
    with pytest.raises(ConfigurationError, match="either engine"):
        start_endpoint(engine=DynamoEngine(), profile=DYNAMODB_LOCAL)


def test_embedded_endpoint__no_engine__configuration_error_naming_start_endpoint() -> None:
    with pytest.raises(ConfigurationError, match="start_endpoint"):
        EmbeddedEndpoint(0)


def test_shared_endpoint__one_per_process__labkit_profile() -> None:
    """connect('embedded') uses one running endpoint per process, built by the root."""
    first, second = shared_endpoint(), shared_endpoint()
    assert first is second and first.running
    assert [type(h) for h in first.engine.hooks] == [PartitionThrottle, FaultInjector]


# --- the profiles over HTTP ---------------------------------------------------------------------
def test_labkit_profile__set_then_get_faults__round_trip(labkit_ep: EmbeddedEndpoint) -> None:
    rules = {"seed": 3, "rules": [{"operation": "PutItem", "error": "ThrottlingException", "count": 1}]}
    assert post(labkit_ep.url, "Labkit.SetFaults", json.dumps(rules).encode()) == (200, {"Rules": 1})
    status, got = post(labkit_ep.url, "Labkit.GetFaults", b"{}")
    assert status == 200
    assert (got["seed"], got["rules"], got["Fired"], got["Held"]) == (3, rules["rules"], [0], [])
    assert sum(isinstance(h, FaultInjector) for h in labkit_ep.engine.hooks) == 1  # no second one added
    post(labkit_ep.url, "Labkit.SetFaults", b"{}")


def test_labkit_profile__unknown_control__unknown_operation_naming_the_known_ones(labkit_ep: EmbeddedEndpoint) -> None:
    status, body = post(labkit_ep.url, "Labkit.Explode", b"{}")
    assert status == 400 and body["__type"] == "com.amazon.coral.service#UnknownOperationException"
    assert "Labkit.SetFaults" in body["message"]


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]"])
def test_labkit_profile__control_body_not_an_object__serialization_exception(
    labkit_ep: EmbeddedEndpoint, body: bytes
) -> None:
    status, answer = post(labkit_ep.url, "Labkit.GetFaults", body)
    assert status == 400 and answer["__type"].endswith("#SerializationException")


@pytest.mark.parametrize("seconds", [-1, "5", True, None])
def test_labkit_profile__advance_clock_bad_seconds__400_and_clock_unchanged(
    labkit_ep: EmbeddedEndpoint, seconds: object
) -> None:
    before = labkit_ep.engine.now()
    status, body = post(labkit_ep.url, "Labkit.AdvanceClock", json.dumps({"Seconds": seconds}).encode())
    assert status == 400 and body["__type"].endswith("#ValidationException")
    assert "Seconds must be a number of seconds >= 0" in body["message"]
    assert labkit_ep.engine.now() == before


def test_dynamodb_local_profile__labkit_control__answered_like_an_unknown_operation(
    local_ep: EmbeddedEndpoint,
) -> None:
    """As DynamoDB answers an operation it does not have: same status, same __type, same words."""
    control = post(local_ep.url, "Labkit.SetFaults", b'{"rules": []}')
    unknown = post(local_ep.url, "DynamoDB_20120810.SetFaults", b'{"rules": []}')
    assert control[0] == unknown[0] == 400
    assert control[1]["__type"] == unknown[1]["__type"] == "com.amazon.coral.service#UnknownOperationException"
    assert control[1]["message"] == "unknown operation 'Labkit.SetFaults'"


def test_dynamodb_local_profile__fault_client__configuration_error_pointing_at_race_lab_faults(
    local_ep: EmbeddedEndpoint,
) -> None:
    """set_endpoint_faults against an endpoint without controls says why and what to use instead."""
    conn = Connection("embedded", local_ep.url, C.LOCAL_REGION)
    with pytest.raises(ConfigurationError, match="race lab's per-call faults"):
        set_endpoint_faults(conn, [])


def _hammer(url: str, table: str, writes: int) -> int:
    """``writes`` UpdateItems to one key at one instant (fake clock); how many were throttled."""
    client = raw_client(url)
    set_partition_scale(client, table, 0.01)  # 10 write units a second for the partition
    outcomes = [hot_write(client, table) for _ in range(writes)]
    assert set(outcomes) <= {"ok", "ThrottlingException"}, outcomes
    return outcomes.count("ThrottlingException")


def test_dynamodb_local_profile__hot_tagged_key__never_throttles(local_ep: EmbeddedEndpoint) -> None:
    """No partition throttle: 40 writes to one tagged key at one instant all succeed."""
    assert _hammer(local_ep.url, make_table(raw_client(local_ep.url)), 40) == 0


def test_labkit_profile__hot_tagged_key__throttles(labkit_ep: EmbeddedEndpoint) -> None:
    """The same hammering on the labkit profile is throttled (so the test above can fail)."""
    assert _hammer(labkit_ep.url, make_table(raw_client(labkit_ep.url)), 40) >= 25


# --- the engine's public API for plug-ins ------------------------------------------------------
def test_advance_clock__moves_now_for_hooks_and_returns_the_total() -> None:
    clock, seen = FakeClock(100.0), Seen()
    engine = DynamoEngine(clock, hooks=[seen])
    assert engine.advance_clock(30) == 30.0 and engine.advance_clock(1.5) == 31.5
    clock.now += 2
    assert engine.now() == 100.0 + 2 + 31.5
    with start_endpoint(engine=engine) as ep:
        client = raw_client(ep.url)
        table = make_table(client)
        client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "b"}})
    assert seen.now == [133.5]


@pytest.mark.parametrize("seconds", [-0.5, float("nan"), True])
def test_advance_clock__not_a_number_of_seconds_ge_0__validation_error(seconds: float) -> None:
    engine = DynamoEngine(FakeClock(100.0))
    with pytest.raises(ValidationError, match="seconds must be a number of seconds >= 0"):
        engine.advance_clock(seconds)
    assert engine.now() == 100.0


def test_advance_clock__past_ten_minutes__token_forgotten(labkit_ep: EmbeddedEndpoint) -> None:
    """DynamoDB: a ClientRequestToken is valid for 10 minutes after the first request that uses it.
    After advance_clock(conn, 601) the same token with another request is a new request."""
    client = raw_client(labkit_ep.url)
    table = make_table(client)
    conn = Connection("embedded", labkit_ep.url, C.LOCAL_REGION, table)
    token = uuid.uuid4().hex

    def put(value: str) -> Any:
        item = {"PK": {"S": "T"}, "SK": {"S": "X"}, "v": {"S": value}}
        return client.transact_write_items(
            TransactItems=[{"Put": {"TableName": table, "Item": item}}], ClientRequestToken=token
        )

    put("first")
    with pytest.raises(ClientError) as caught:
        put("second")
    assert caught.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    total = advance_clock(conn, C.CLIENT_REQUEST_TOKEN_TTL_SECONDS + 1)
    assert total >= C.CLIENT_REQUEST_TOKEN_TTL_SECONDS + 1
    put("second")
    got = client.get_item(TableName=table, Key={"PK": {"S": "T"}, "SK": {"S": "X"}})["Item"]
    assert got["v"] == {"S": "second"}


def test_generation__moves_on_control_plane_only_and_is_read_only() -> None:
    """Plug-ins cache table views until a control-plane request; data-plane requests leave it."""
    engine = DynamoEngine(FakeClock(100.0))
    with start_endpoint(engine=engine) as ep:
        client = raw_client(ep.url)
        before = engine.generation
        table = make_table(client)
        created = engine.generation
        client.put_item(TableName=table, Item={"PK": {"S": "a"}, "SK": {"S": "b"}})
        assert created > before and engine.generation == created
        arn = client.describe_table(TableName=table)["Table"]["TableArn"]
        client.tag_resource(ResourceArn=arn, Tags=[{"Key": "k", "Value": "v"}])
        assert engine.generation > created
    with pytest.raises(AttributeError):
        engine.generation = 0  # type: ignore[misc]


def test_fault_injector__idle__wants_no_request() -> None:
    """An injector without rules or holds leaves every request on the engine's fast path."""
    injector = FaultInjector()
    info = RequestInfo("PutItem", "1", "us-east-1", (), (("t", "k"),), {})
    assert injector.wants(info) is False
    injector.set_rules(FaultRules.parse([{"operation": "PutItem", "error": "ThrottlingException"}]))
    assert injector.wants(info) is True
