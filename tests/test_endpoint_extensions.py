"""The engine's extension point: default hooks, and ``Labkit.*`` control requests over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from engine_support import post

from labkit.endpoint import DynamoEngine, EmbeddedEndpoint
from labkit.faults import FaultInjector
from labkit.throughput import PartitionThrottle


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with EmbeddedEndpoint(engine=DynamoEngine()) as ep:
        yield ep


def test_engine__default__one_tag_only_partition_throttle() -> None:
    """DynamoEngine() starts with the hot-keys throttle, without a scale (tagged tables only)."""
    (hook,) = DynamoEngine().hooks
    assert isinstance(hook, PartitionThrottle) and hook.scale is None


def test_engine__hooks_empty__starts_with_none() -> None:
    assert DynamoEngine(hooks=[]).hooks == ()


def test_control__set_then_get_faults__rules_round_trip_and_injector_added(endpoint: EmbeddedEndpoint) -> None:
    rules = {"seed": 3, "rules": [{"operation": "PutItem", "error": "ThrottlingException", "count": 1}]}
    assert post(endpoint.url, "Labkit.SetFaults", b'{"seed": 3, "rules": []}') == (200, {"Rules": 0})
    status, _ = post(endpoint.url, "Labkit.SetFaults", json.dumps(rules).encode())
    got_status, got = post(endpoint.url, "Labkit.GetFaults", b"{}")
    assert (status, got_status) == (200, 200)
    assert (got["seed"], got["rules"], got["Fired"], got["Held"]) == (3, rules["rules"], [0], [])
    assert sum(isinstance(h, FaultInjector) for h in endpoint.engine.hooks) == 1
    post(endpoint.url, "Labkit.SetFaults", b"{}")


def test_control__unknown_operation__400_validation_exception_naming_the_known_ones(endpoint: EmbeddedEndpoint) -> None:
    status, body = post(endpoint.url, "Labkit.Explode", b"{}")
    assert status == 400 and body["__type"].endswith("#ValidationException")
    assert "Labkit.SetFaults" in body["message"]


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]"])
def test_control__body_not_a_json_object__400_serialization_exception(endpoint: EmbeddedEndpoint, body: bytes) -> None:
    status, answer = post(endpoint.url, "Labkit.GetFaults", body)
    assert status == 400 and answer["__type"].endswith("#SerializationException")


def test_control__advance_clock_negative__refused_and_clock_unchanged(endpoint: EmbeddedEndpoint) -> None:
    before = endpoint.engine.tokens.clock()
    status, body = post(endpoint.url, "Labkit.AdvanceClock", b'{"Seconds": -1}')
    assert status == 400 and "Seconds, a number >= 0" in body["message"]
    assert endpoint.engine.tokens.clock() - before < 60
