"""recipes/flags.py: the reader fails closed, caches, backs off after a failure and serves last known good."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from labkit.races import explore
from labkit.shared.backend import Connection
from recipes.flags import DEFAULTS, KEY, FlagReader, Flags, decode
from tests.cookbook.exploration import FAULTS

STORED = {"signup_enabled": {"BOOL": True}, "maintenance_mode": {"BOOL": False}, "rate_limit_per_minute": {"N": "90"}}


def put_flags(conn: Connection, **attributes: Any) -> None:
    conn.client.put_item(TableName=conn.table_name, Item={**KEY, "version": {"N": "1"}, **attributes})


class OnlyClientErrors(FlagReader):
    """Broken: catches DynamoDB's answers (ClientError) but not a lost one (botocore's ReadTimeoutError)."""

    def read(self) -> Flags:
        try:
            item = self.client.get_item(TableName=self.table, Key=KEY).get("Item")
        except ClientError as exc:
            return Flags(dict(DEFAULTS), "defaults", str(exc))
        return Flags(decode(item) if item else dict(DEFAULTS), "item")


def admin_and_reader(conn: Connection, reader: type[FlagReader]) -> Any:
    """A turns maintenance off while B's process reads the flags twice (no cache); B must always get
    either the flags as stored before or after A's write, or the safe defaults — and never raise."""
    table = conn.table_name
    before, after = decode({**STORED, "maintenance_mode": {"BOOL": True}}), decode(STORED)

    def admin(client: Any) -> None:
        client.update_item(
            TableName=table,
            Key=KEY,
            UpdateExpression="SET maintenance_mode = :off",
            ExpressionAttributeValues={":off": {"BOOL": False}},
        )

    def process(client: Any) -> list[Flags]:
        flags = reader(client, table, ttl=0, retry_after=0)
        return [flags.read(), flags.read()]

    def safe_answers(res: Any) -> None:
        assert "B" not in res.errors, f"the reader raised {res.errors['B']!r}: it must fail closed"
        for read in res.results["B"]:
            assert read.values in (before, after, DEFAULTS), read
            assert read.source != "defaults" or read.values == DEFAULTS

    return explore(
        {"A": admin, "B": process},
        conn=conn,
        setup=lambda: put_flags(conn, **{**STORED, "maintenance_mode": {"BOOL": True}}),
        invariant=safe_answers,
        faults=FAULTS,
    )


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_read__admin_writes_meanwhile_every_order_and_fault__stored_flags_or_safe_defaults(tconn: Connection) -> None:
    """Every order and a lost answer at each call: the reader answers the item's flags or the defaults."""
    result = admin_and_reader(tconn, FlagReader)
    assert result.passed, result.summary()


def test_read__catching_only_client_errors__a_lost_answer_crashes_the_request(tconn: Connection) -> None:
    """The broken variant: a read timeout is a BotoCoreError, not a ClientError, and escapes."""
    result = admin_and_reader(tconn, OnlyClientErrors)
    assert not result.passed and result.faults and result.faults[0].startswith("B"), result.summary()
    assert "ReadTimeoutError" in (result.message or ""), result.message


def unreachable() -> Any:
    import boto3

    return boto3.client(
        "dynamodb",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(connect_timeout=1, retries={"total_max_attempts": 1}),
    )


def test_read__missing_item_no_table_no_network__the_safe_defaults_with_the_reason(tconn: Connection) -> None:
    """No item, no table, nothing listening: the defaults (maintenance on, signups off), and why."""
    cases = {
        "no settings item": FlagReader(tconn.client, tconn.table_name),
        "ResourceNotFoundException": FlagReader(tconn.client, "labkit-no-such-table"),
        "Could not connect": FlagReader(unreachable(), tconn.table_name),
    }
    for why, reader in cases.items():
        flags = reader.read()
        assert flags.values == DEFAULTS and flags.source == "defaults" and why in flags.reason, flags
        assert flags.values["maintenance_mode"] is True and flags.values["signup_enabled"] is False


def counted_reader(tconn: Connection) -> tuple[FlagReader, list[int], list[float]]:
    """A reader with a 30 s TTL on its own client, the GetItems that client sends (one entry each), and the
    reader's clock (``now[0]``, seconds; the test moves it)."""
    now = [0.0]
    calls: list[int] = []
    client = tconn.new_client()
    client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: calls.append(1))
    return FlagReader(client, tconn.table_name, ttl=30, clock=lambda: now[0]), calls, now


def thousand_requests(reader: FlagReader, now: list[float]) -> list[Flags]:
    """What 1,000 requests 0.1 s apart read (the clock moved before each)."""
    reads = []
    for request in range(1000):
        now[0] = request * 0.1
        reads.append(reader.read())
    return reads


def test_read__ttl_cache__one_get_item_per_ttl(tconn: Connection) -> None:
    """1,000 requests 0.1 s apart with a 30 s TTL: 4 GetItems (at 0, 30, 60, 90 s)."""
    put_flags(tconn, **STORED)
    reader, calls, now = counted_reader(tconn)
    sources = [read.source for read in thousand_requests(reader, now)]
    assert len(calls) == 4 and sources.count("item") == 4 and sources.count("cache") == 996


def test_read__after_a_failed_call__negative_cache_then_stale_then_defaults(tconn: Connection) -> None:
    """Last good flags at t=0; the network fails: within retry_after no call is made; within
    ttl + stale_for the last good flags ("stale"); after that the defaults."""
    put_flags(tconn, **STORED)
    now = [0.0]
    reader = FlagReader(tconn.client, tconn.table_name, ttl=10, retry_after=1, stale_for=60, clock=lambda: now[0])
    assert reader.read().source == "item"
    reader.client = unreachable()
    calls: list[int] = []
    reader.client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: calls.append(1))
    seen, calls_by = {}, {}
    for t in (5, 20, 20.5, 80):
        now[0] = t
        seen[t] = reader.read()
        calls_by[t] = len(calls)
    assert seen[5].source == "cache" and seen[20].source == "stale" and seen[20].values["maintenance_mode"] is False
    assert seen[20.5].source == "stale" and "not retried yet" in seen[20.5].reason
    assert calls_by == {5: 0, 20: 1, 20.5: 1, 80: 2}, "no call within retry_after of the failed one"
    assert seen[80].source == "defaults" and seen[80].values == DEFAULTS


def test_decode__wrong_types__read_as_their_defaults() -> None:
    """A hand-edited "yes" never turns a feature on; a bool is not taken for an int."""
    flags = decode(
        {"signup_enabled": {"S": "yes"}, "rate_limit_per_minute": {"BOOL": True}, "banner_message": {"S": "hi"}}
    )
    assert flags == {**DEFAULTS, "banner_message": "hi"}


def test_read__item_deleted_then_a_call_fails__the_defaults_never_the_deleted_flags(tconn: Connection) -> None:
    """Good flags at t=0; the item is deleted and read as missing at t=10; the network fails at t=20,
    within ttl + stale_for of the good read: the defaults, not the flags of the deleted item."""
    put_flags(tconn, **STORED)
    now = [0.0]
    reader = FlagReader(tconn.client, tconn.table_name, ttl=10, stale_for=60, clock=lambda: now[0])
    assert reader.read().source == "item"
    tconn.client.delete_item(TableName=tconn.table_name, Key=KEY)
    now[0] = 10
    missing = reader.read()
    assert missing.source == "defaults" and "no settings item" in missing.reason, missing
    reader.client = unreachable()
    now[0] = 20
    after = reader.read()
    assert after.source == "defaults" and after.values == DEFAULTS, f"the deleted item's flags served: {after}"


def test_read__missing_item__cached_as_missing_for_the_ttl(tconn: Connection) -> None:
    """No item: 1,000 requests 0.1 s apart with a 30 s TTL make 4 GetItems, each answered "defaults";
    once the item is written, it is read at the next TTL step."""
    reader, calls, now = counted_reader(tconn)
    reads = thousand_requests(reader, now)
    assert len(calls) == 4 and {(r.source, r.values == DEFAULTS) for r in reads} == {("defaults", True)}
    assert "no settings item" in reads[-1].reason, reads[-1]
    put_flags(tconn, **STORED)
    now[0] = 120
    assert reader.read().source == "item" and len(calls) == 5


def test_read__hand_edited_fraction_for_an_int_flag__its_default_no_crash_and_cached(tconn: Connection) -> None:
    """A hand-edited rate limit of 90.5 (an int flag) reads as its default, 60, like any wrong type:
    read() never raises, and the item is cached, so 100 requests within the TTL make one GetItem."""
    put_flags(tconn, **{**STORED, "rate_limit_per_minute": {"N": "90.5"}})
    calls: list[int] = []
    client = tconn.new_client()
    client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: calls.append(1))
    reader = FlagReader(client, tconn.table_name, ttl=30, clock=lambda: 0.0)
    reads = [reader.read() for _ in range(100)]
    assert reads[0].source == "item" and reads[0].values["rate_limit_per_minute"] == 60, reads[0]
    assert reads[0].values["maintenance_mode"] is False, "the other flags are read as stored"
    assert len(calls) == 1 and {r.source for r in reads[1:]} == {"cache"}


def test_decode__fraction_for_an_int_flag__its_default() -> None:
    """90.5 is a number DynamoDB stores, but not a whole one: the int flag reads as its default, never a crash."""
    for stored in ("90.5", "-0.5", "90.0"):
        assert decode({"rate_limit_per_minute": {"N": stored}})["rate_limit_per_minute"] == 60, stored
    assert decode({"rate_limit_per_minute": {"N": "-5"}})["rate_limit_per_minute"] == -5


def test_read__get_item_in_flight__holds_the_lock_other_threads_wait(tconn: Connection) -> None:
    """While a read's GetItem is on the wire the reader's lock is held, so another thread's read() waits for
    that answer instead of racing it (one GetItem per ttl per process); invalidate() takes the lock too."""
    put_flags(tconn, **STORED)
    client = tconn.new_client()
    reader = FlagReader(client, tconn.table_name, ttl=30, clock=lambda: 0.0)
    held: list[bool] = []
    client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: held.append(reader.lock.locked()))
    assert reader.read().source == "item" and held == [True]
    assert not reader.lock.locked(), "the lock is released after the read"
    reader.invalidate()
    assert not reader.lock.locked() and reader.read().source == "item" and held == [True, True]
