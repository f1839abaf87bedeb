"""The engine's one clock, and a lab that owns it: ``DynamoEngine.set_clock``, ``Labkit.SetClock``,
``Labkit.AdvanceClock``, :func:`labkit.engine_plugins.faults.lab_clock` (decision 140)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import DYNAMODB_LOCAL, LABKIT, start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint
from labkit.engine_plugins.faults import lab_clock, set_lab_clock
from labkit.engine_plugins.throughput import set_partition_scale
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.errors import ConfigurationError, ValidationError
from tests.endpoint.clients import post, raw_client
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.tables import hot_write, make_table


@pytest.fixture
def clock() -> FakeClock:
    """The 'real' time under the engine: it moves only when the test moves it."""
    return FakeClock(100.0)


@pytest.fixture
def ep(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(profile=LABKIT, clock=clock) as endpoint:
        yield endpoint


def _conn(ep: EmbeddedEndpoint, table: str = "labkit-clock") -> Connection:
    return Connection("embedded", ep.url, C.LOCAL_REGION, table)


# --- the engine -----------------------------------------------------------------------------------
def test_set_clock__frozen__real_time_does_not_reach_it_and_advance_moves_it_exactly(clock: FakeClock) -> None:
    """Frozen, the engine's clock stands still however much real time passes; AdvanceClock moves it."""
    engine = DynamoEngine(clock)
    assert engine.set_clock("frozen") == "real" and engine.clock_mode == "frozen"
    clock.now += 50
    assert engine.now() == 100.0
    engine.advance_clock(2.5)
    assert engine.now() == 102.5


def test_set_clock__real_again__goes_on_from_where_it_stood_never_back(clock: FakeClock) -> None:
    """Given back, the clock follows real time from the instant it stood at: the seconds that passed
    while it was frozen never reach it, and it never goes back."""
    engine = DynamoEngine(clock)
    engine.set_clock("frozen")
    engine.advance_clock(1.0)
    clock.now += 30  # real time while frozen
    assert engine.set_clock("real") == "frozen" and engine.now() == 101.0
    clock.now += 4
    assert engine.now() == 105.0 and engine.advance_clock(0) == 1.0


def test_set_clock__same_mode_twice__changes_nothing(clock: FakeClock) -> None:
    """Freezing a frozen clock keeps the instant it was frozen at; thawing a real one is a no-op."""
    engine = DynamoEngine(clock)
    assert engine.set_clock("real") == "real" and engine.now() == 100.0
    engine.set_clock("frozen")
    clock.now += 7
    assert engine.set_clock("frozen") == "frozen" and engine.now() == 100.0


@pytest.mark.parametrize("mode", ["paused", "", None, "FROZEN"])
def test_set_clock__unknown_mode__validation_error_listing_the_modes(clock: FakeClock, mode: Any) -> None:
    engine = DynamoEngine(clock)
    with pytest.raises(ValidationError, match="choose one of: real, frozen"):
        engine.set_clock(mode)
    assert engine.clock_mode == "real"


def test_frozen_clock__hot_key__bucket_refills_only_when_the_lab_moves_the_clock(
    ep: EmbeddedEndpoint, clock: FakeClock
) -> None:
    """The partition throttle reads the engine's clock: frozen, a minute of real time refills nothing;
    one lab second refills one second of the partition's limit (10 writes/s at scale 0.01)."""
    client = raw_client(ep.url)
    table = make_table(client)
    set_partition_scale(client, table, 0.01)
    ep.engine.set_clock("frozen")

    def write() -> str:
        return hot_write(client, table)

    assert [write() for _ in range(11)] == ["ok"] * 10 + ["ThrottlingException"]
    clock.now += 60
    assert write() == "ThrottlingException"
    ep.engine.advance_clock(1.0)
    assert [write() for _ in range(11)] == ["ok"] * 10 + ["ThrottlingException"]


# --- Labkit.SetClock over HTTP --------------------------------------------------------------------
def test_set_clock_control__frozen_then_real__answers_mode_and_previous(ep: EmbeddedEndpoint) -> None:
    assert post(ep.url, "Labkit.SetClock", b'{"Mode": "frozen"}') == (200, {"Mode": "frozen", "Previous": "real"})
    assert post(ep.url, "Labkit.SetClock", b'{"Mode": "real"}') == (200, {"Mode": "real", "Previous": "frozen"})


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"Mode": "paused"}, "Labkit.SetClock: unknown Mode 'paused'; choose one of: real, frozen"),
        ({"Mode": 1}, "Labkit.SetClock: unknown Mode 1; choose one of: real, frozen"),
        ({}, "Labkit.SetClock: Mode is required; choose one of: real, frozen"),
        ({"Mode": "frozen", "Seconds": 5}, "Labkit.SetClock: unknown field(s) Seconds; it takes only Mode"),
    ],
)
def test_set_clock_control__bad_body__400_validation_exception_and_clock_unchanged(
    ep: EmbeddedEndpoint, body: dict[str, Any], words: str
) -> None:
    """Bad input is a 400 ValidationException that says what to send, never a 500; nothing changes."""
    status, answer = post(ep.url, "Labkit.SetClock", json.dumps(body).encode())
    assert status == 400 and answer["__type"] == "com.amazonaws.dynamodb.v20120810#ValidationException"
    assert answer["message"] == words
    assert ep.engine.clock_mode == "real"


@pytest.mark.parametrize("seconds", [-1, -0.001])
def test_advance_clock_control__negative_seconds__400_validation_exception(
    ep: EmbeddedEndpoint, seconds: float
) -> None:
    status, answer = post(ep.url, "Labkit.AdvanceClock", json.dumps({"Seconds": seconds}).encode())
    assert status == 400 and answer["__type"].endswith("#ValidationException")
    assert answer["message"] == f"Labkit.AdvanceClock: Seconds must be a number of seconds >= 0, not {seconds!r}"


# --- the client: lab_clock ------------------------------------------------------------------------
def test_lab_clock__inside_frozen_moved_only_by_the_lab__given_back_after(
    ep: EmbeddedEndpoint, clock: FakeClock
) -> None:
    """``with lab_clock(conn)``: frozen inside, moved by ``advance``/``at`` only; real time again after."""
    with lab_clock(_conn(ep)) as lab:
        assert ep.engine.clock_mode == "frozen"
        start = ep.engine.now()
        clock.now += 100
        assert lab.advance(0.5) == 0.5 and lab.at(2.0) == 2.0
        assert ep.engine.now() == start + 2.0
    assert ep.engine.clock_mode == "real"


def test_lab_clock__already_frozen__stays_frozen_after(ep: EmbeddedEndpoint) -> None:
    """A block gives the clock back as it found it: frozen (by an outer block, a test) stays frozen."""
    conn = _conn(ep)
    with lab_clock(conn):
        with lab_clock(conn):
            pass
        assert ep.engine.clock_mode == "frozen"
    assert ep.engine.clock_mode == "real"
    assert set_lab_clock(conn, "frozen") == "real"
    with lab_clock(conn):
        pass
    assert set_lab_clock(conn, "real") == "frozen"


def test_lab_clock__back_in_time_or_negative__validation_error_sent_nothing(ep: EmbeddedEndpoint) -> None:
    with lab_clock(_conn(ep)) as lab:
        lab.at(3.0)
        before = ep.engine.now()
        with pytest.raises(ValidationError, match="never goes back; 1 s is earlier"):
            lab.at(1.0)
        with pytest.raises(ValidationError, match="seconds must be a number of seconds >= 0"):
            lab.advance(-2)
        assert ep.engine.now() == before and lab.elapsed == 3.0


def test_lab_clock__dynamodb_local_profile__configuration_error() -> None:
    """An endpoint without labkit's controls cannot lend its clock: a clear error, not a hang."""
    with (
        start_endpoint(profile=DYNAMODB_LOCAL) as local,
        pytest.raises(ConfigurationError, match="does not answer"),
        lab_clock(_conn(local)),
    ):
        pass


def test_lab_clock__token_window__resend_at_ten_minutes_is_a_new_request(ep: EmbeddedEndpoint) -> None:
    """DynamoDB: "A client request token is valid for 10 minutes after the first request that uses it
    is completed. After 10 minutes, any request with the same client token is treated as a new request."
    On the lab's clock: a different request with the token at 599.9 s is a mismatch; at 600 s it is new."""
    client = raw_client(ep.url)
    table = make_table(client)
    token = uuid.uuid4().hex

    def put(value: str) -> None:
        item = {"PK": {"S": "T"}, "SK": {"S": "X"}, "v": {"S": value}}
        put_item = {"Put": {"TableName": table, "Item": item}}
        client.transact_write_items(TransactItems=[put_item], ClientRequestToken=token)

    with lab_clock(_conn(ep, table)) as lab:
        put("first")
        lab.at(C.CLIENT_REQUEST_TOKEN_TTL_SECONDS - 0.1)
        with pytest.raises(ClientError) as caught:
            put("second")
        assert caught.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
        lab.at(C.CLIENT_REQUEST_TOKEN_TTL_SECONDS)
        put("second")
    got = client.get_item(TableName=table, Key={"PK": {"S": "T"}, "SK": {"S": "X"}}, ConsistentRead=True)["Item"]
    assert got["v"] == {"S": "second"}
