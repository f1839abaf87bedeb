"""The per-process cache of the settings item."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders

from labkit.patterns.singleton import (
    FlagCache,
    FlagRead,
    FlagStore,
)
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    ValidationError,
)
from tests.patterns.flags import SAFE, Clock, count_calls


def test_cache__within_ttl__serves_from_cache_without_a_call(tconn: Connection) -> None:
    """Reads within the TTL are hits; after it, one GetItem again."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, cache_ttl=30, clock=clock)
    store.create()
    calls = count_calls(store)
    first = store.read()
    clock.now += 29
    second = store.read()
    clock.now += 2
    third = store.read()
    assert [first.source, second.source, third.source] == ["item", "cache", "item"]
    assert calls == ["GetItem", "GetItem"]
    assert (store.cache.hits, store.cache.misses) == (1, 2)


def test_cache__invalidate__next_read_goes_to_dynamodb(tconn: Connection) -> None:
    """invalidate() forgets the cached flags; so does a successful write through the store."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, clock=clock)
    store.create()
    store.read()
    store.invalidate()
    assert store.read().source == "item"
    store.set_flags(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__defaults__not_cached(tconn: Connection) -> None:
    """A fail-closed read is not cached: the item appearing is seen at once."""
    store = FlagStore(tconn.client, tconn.table_name, clock=Clock())
    assert store.read().source == "defaults"
    FlagStore(tconn.client, tconn.table_name).create(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__negative_ttl__refused(tconn: Connection) -> None:
    """A negative TTL is a mistake, not 'never cache'."""
    with pytest.raises(ValidationError, match="ttl"):
        FlagStore(tconn.client, tconn.table_name, cache_ttl=-1)


# ---------------------------------------------------------------- last known good (stale_for)


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def answer_with(client: Any, status: int, code: str) -> list[int]:
    """From now on every GetItem of ``client`` gets this HTTP error from "DynamoDB" (botocore parses it)."""
    sent: list[int] = []

    def reply(request: Any, **_: Any) -> AWSResponse:
        sent.append(status)
        body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code}).encode()
        headers = HTTPHeaders()
        headers["x-amzn-RequestId"] = "test"
        return AWSResponse(request.url, status, headers, _Body(body))

    client.meta.events.register("before-send.dynamodb.GetItem", reply)
    return sent


def stale_store(tconn: Connection, clock: Clock, **options: Any) -> FlagStore:
    client = tconn.new_client(retries={"total_max_attempts": 1, "mode": "standard"})
    store = FlagStore(client, tconn.table_name, cache_ttl=30, clock=clock, **options)
    store.create(maintenance_mode=False)
    assert store.read().source == "item"
    return store


def dead_client(conn: Connection) -> Any:
    dead = Connection("endpoint", "http://127.0.0.1:9", conn.region, "labkit-x")
    return dead.new_client(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1)


def test_read__network_down_within_stale_for__last_good_flags_as_stale(tconn: Connection) -> None:
    """A failed call serves the last good read while younger than ttl + stale_for, then the defaults."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60)
    store.client = dead_client(tconn)
    clock.now += 40
    res = store.read()
    assert (res.source, res.is_default, res["maintenance_mode"], res.age) == ("stale", False, False, 40.0)
    assert res.error_code == "EndpointConnectionError"
    assert "serving the last good flags, 40 s old" in res.reason
    clock.now += 50  # 90 s old: past cache_ttl 30 + stale_for 60
    late = store.read()
    assert (late.source, late.is_default, late["maintenance_mode"]) == ("defaults", True, True)
    assert late.error_code == "EndpointConnectionError"


def test_read__stale_for_zero__failed_call_fails_closed(tconn: Connection) -> None:
    """The default (stale_for=0) keeps the strict behaviour: a failed call gives the defaults."""
    clock = Clock()
    store = stale_store(tconn, clock)
    store.client = dead_client(tconn)
    clock.now += 31
    res = store.read()
    assert (res.source, dict(res.flags), res.age) == ("defaults", SAFE, None)


def test_read__item_missing__defaults_not_stale(tconn: Connection) -> None:
    """A missing item is DynamoDB's answer, not a failed call: the defaults, even with stale_for."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60)
    tconn.client.delete_item(TableName=tconn.table_name, Key=store.key)
    clock.now += 31
    res = store.read()
    assert (res.source, dict(res.flags)) == ("defaults", SAFE)
    assert "no item at PK=SETTINGS#APP SK=FLAGS#V1" in res.reason


def test_read__item_deleted_then_a_call_fails__defaults_never_the_deleted_flags(tconn: Connection) -> None:
    """Read as missing after a good read, then the network fails within cache_ttl + stale_for of the good
    read: the defaults — the missing answer forgot the last good flags (issue 40, point 5)."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60)
    tconn.client.delete_item(TableName=tconn.table_name, Key=store.key)
    clock.now += 31
    assert store.read().source == "defaults"
    store.client = dead_client(tconn)
    clock.now += 2  # past retry_after: this read calls, and the call fails
    res = store.read()
    assert (res.source, dict(res.flags)) == ("defaults", SAFE), res


def test_read__throttled__not_called_again_during_retry_after(tconn: Connection) -> None:
    """After a throttled GetItem, reads within retry_after serve stale flags without a call."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60, retry_after=1.0)
    sent = answer_with(store.client, 400, "ThrottlingException")
    clock.now += 31
    first = store.read()
    clock.now += 0.5
    during = [store.read() for _ in range(10)]
    assert sent == [400]
    assert {r.source for r in [first, *during]} == {"stale"}
    assert {r.error_code for r in during} == {"ThrottlingException"}
    assert "not retried for 1 s" in during[0].reason
    clock.now += 0.6
    assert store.read().source == "stale"
    assert sent == [400, 400]


def test_read__5xx__counts_as_a_failed_call(tconn: Connection) -> None:
    """An InternalServerError (HTTP 500) serves the last good flags like a network error."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60)
    answer_with(store.client, 500, "InternalServerError")
    clock.now += 31
    res = store.read()
    assert (res.source, res.error_code, res["maintenance_mode"]) == ("stale", "InternalServerError", False)


def test_read__dynamodb_back_after_retry_after__fresh_item_again(tconn: Connection) -> None:
    """When DynamoDB answers again after the back-off, the read is the stored item."""
    clock = Clock()
    store = stale_store(tconn, clock, stale_for=60)
    good = store.client
    store.client = dead_client(tconn)
    clock.now += 31
    assert store.read().source == "stale"
    store.client = good
    clock.now += 1
    assert store.read().source == "item"


def test_cache__ttl_ended__last_good_still_kept() -> None:
    """get() stops serving after the TTL; last_good() still gives the read and its age."""
    clock = Clock()
    cache = FlagCache(10, clock)
    read = FlagRead({"a": True}, "item")
    cache.put(read)
    clock.now += 15
    assert cache.get() is None
    assert cache.last_good(20) == (read, 15.0)
    assert cache.last_good(15) is None


def test_store__negative_stale_for__refused(tconn: Connection) -> None:
    """A negative stale_for or retry_after is a mistake, refused before any call."""
    with pytest.raises(ValidationError, match="stale_for"):
        FlagStore(tconn.client, tconn.table_name, stale_for=-1)
