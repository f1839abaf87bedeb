"""The partition throughput model: per-partition limits, buckets, burst, the error DynamoDB returns."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError

import labkit
from labkit.embedded import start_endpoint
from labkit.endpoint import DynamoEngine, EmbeddedEndpoint
from labkit.engine_plugins.throughput import (
    SCALE_TAG,
    PartitionThrottle,
    TableSettings,
    TokenBucket,
    check_scale,
    describe_scale,
    engine_settings,
    partition_limits,
    set_partition_scale,
    throttling_reasons,
)
from labkit.lab.storms import plot_storm, storm
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.engine_hooks import RequestInfo
from labkit.shared.errors import ValidationError
from tests.endpoint.fake_clock import FakeClock

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/labkit-t"


def _settings(scale: float | None = None, provisioned: tuple[float, float] | None = None) -> object:
    def lookup(account: str, region: str, table: str) -> TableSettings | None:
        return TableSettings(ARN, scale, provisioned) if table == "labkit-t" else None

    return lookup


def _write(pk: str = "HOT", table: str = "labkit-t") -> RequestInfo:
    return RequestInfo("UpdateItem", "123456789012", "us-east-1", (), ((table, pk),), {})


def _read(pk: str = "HOT") -> RequestInfo:
    return RequestInfo("GetItem", "123456789012", "us-east-1", (("labkit-t", pk),), (), {})


def _admitted(throttle: PartitionThrottle, request: RequestInfo, now: float, units: float = 1.0) -> bool:
    """One request through the hook: admitted (and paid for) or throttled."""
    if throttle.before(request, now) is not None:
        return False
    (pair,) = request.writes or request.reads
    consumed = (0.0, units) if request.writes else (units, 0.0)
    throttle.after(request, {pair: consumed}, now)
    return True


# --- limits ----------------------------------------------------------------------------------


def test_partition_limits__scale__multiplies_dynamodbs_documented_limits() -> None:
    """scale 0.05 is 1/20 of 3,000 read and 1,000 write units a second."""
    assert partition_limits(1) == (C.PARTITION_READ_UNITS_PER_SECOND, C.PARTITION_WRITE_UNITS_PER_SECOND)
    assert partition_limits(0.05) == pytest.approx((150.0, 50.0))
    assert "partition scale 0.05 (1/20 of DynamoDB)" in describe_scale(0.05)


@pytest.mark.parametrize("bad", [0, -0.5, 1.5, "x", None, float("nan")])
def test_check_scale__out_of_range__validation_error_names_the_range(bad: object) -> None:
    """A scale outside (0, 1] is refused before anything happens."""
    with pytest.raises(ValidationError, match=r"in \(0, 1\]"):
        check_scale(bad)


def test_throttle__hot_partition__admits_one_second_of_its_limit_then_throttles() -> None:
    """At scale 0.05 a partition takes 50 one-unit writes at once, and the 51st is throttled."""
    throttle = PartitionThrottle(settings=_settings(0.05))  # type: ignore[arg-type]
    admitted = [_admitted(throttle, _write(), 0.0) for _ in range(60)]
    assert admitted.count(True) == 50
    assert admitted[50:] == [False] * 10
    assert throttle.throttled == {("labkit-t", "HOT", "Write"): 10}


def test_throttle__limits_are_per_partition__another_key_is_unaffected() -> None:
    """A hot key does not throttle its neighbours: each key value is its own partition."""
    throttle = PartitionThrottle(settings=_settings(0.05))  # type: ignore[arg-type]
    for _ in range(50):
        assert _admitted(throttle, _write("HOT"), 0.0)
    assert not _admitted(throttle, _write("HOT"), 0.0)
    assert all(_admitted(throttle, _write("COLD"), 0.0) for _ in range(50))


def test_throttle__refill__rate_per_second_of_the_scaled_limit() -> None:
    """An empty write bucket at 50 units/s admits 5 one-unit writes 0.1 s later, not 6."""
    throttle = PartitionThrottle(settings=_settings(0.05))  # type: ignore[arg-type]
    while _admitted(throttle, _write(), 0.0):
        pass
    assert [_admitted(throttle, _write(), 0.1) for _ in range(6)] == [True] * 5 + [False]


def test_throttle__reads__3000_units_scaled_and_separate_from_writes() -> None:
    """Reads have their own bucket: 150 read units at scale 0.05, while writes stay full."""
    throttle = PartitionThrottle(settings=_settings(0.05))  # type: ignore[arg-type]
    assert sum(_admitted(throttle, _read(), 0.0, units=0.5) for _ in range(400)) == 300
    assert _admitted(throttle, _write(), 0.0)


def test_throttle__large_write__puts_the_bucket_in_debt_until_refilled() -> None:
    """A request pays what it consumed: a 60-unit write empties a 50-unit bucket for 0.2 s."""
    throttle = PartitionThrottle(settings=_settings(0.05))  # type: ignore[arg-type]
    assert _admitted(throttle, _write(), 0.0, units=60)
    assert not _admitted(throttle, _write(), 0.19)
    assert _admitted(throttle, _write(), 0.21)


def test_throttle__untagged_table_and_no_endpoint_scale__never_throttles() -> None:
    """Off by default: a table without the tag is not throttled however hot its key."""
    throttle = PartitionThrottle(settings=_settings(None))  # type: ignore[arg-type]
    assert all(_admitted(throttle, _write(), 0.0) for _ in range(5000))


def test_throttle__endpoint_scale__applies_to_tables_without_a_tag() -> None:
    """PartitionThrottle(scale=...) throttles every table; a table's tag would override it."""
    throttle = PartitionThrottle(scale=0.01, settings=_settings(None))  # type: ignore[arg-type]
    assert sum(_admitted(throttle, _write(), 0.0) for _ in range(20)) == 10


def test_throttle__provisioned_table__burst_keeps_300_seconds_of_unused_capacity() -> None:
    """A 1-WCU provisioned table, idle for 300 s or more, absorbs 300 writes at once, then throttles."""
    throttle = PartitionThrottle(settings=_settings(1.0, provisioned=(1.0, 1.0)))  # type: ignore[arg-type]
    results = [_admitted(throttle, _write(f"K{i}"), 0.0) for i in range(C.BURST_SECONDS + 1)]
    assert results.count(True) == C.BURST_SECONDS
    rejection = throttle.before(_write("K-new"), 0.0)
    assert rejection is not None
    assert rejection.code == "ProvisionedThroughputExceededException"
    assert rejection.message == C.PROVISIONED_THROUGHPUT_EXCEEDED_MESSAGE
    reason = {"reason": "TableWriteProvisionedThroughputExceeded", "resource": ARN}
    assert rejection.extra == {"ThrottlingReasons": [reason]}
    assert _admitted(throttle, _write("K-new"), 1.0)  # 1 WCU refilled after a second


def test_token_bucket__idle__never_holds_more_than_its_capacity() -> None:
    """Unused capacity is kept only up to the bucket's depth."""
    bucket = TokenBucket(rate=10, capacity=10, now=0.0)
    bucket.spend(10, 0.0)
    assert bucket.level(100.0) == 10


# --- the error on the wire ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def endpoint(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    """An endpoint with the default hooks (tag opt-in), on a fake clock."""
    with start_endpoint(clock=clock) as ep:
        yield ep


def _add(conn: Connection, client: object, pk: str = "COUNTER") -> None:
    client.update_item(  # type: ignore[attr-defined]
        TableName=conn.table_name,
        Key={"PK": {"S": pk}, "SK": {"S": "X"}},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )


def test_endpoint__untagged_table__is_not_throttled(lab: Connection) -> None:
    """Other lessons are unaffected: 120 writes to one key at one instant all succeed."""
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    for _ in range(120):
        _add(lab, client)


def test_endpoint__tagged_on_demand_table__throttling_exception_with_key_range_reason(
    lab: Connection, clock: FakeClock
) -> None:
    """The tag opts the table in; the 21st write at scale 0.02 gets DynamoDB's on-demand error."""
    set_partition_scale(lab.client, lab.table_name, 0.02)
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    for _ in range(20):
        _add(lab, client)
    with pytest.raises(ClientError) as caught:
        _add(lab, client)
    error: dict[str, Any] = dict(caught.value.response)
    assert error["Error"]["Code"] == "ThrottlingException"
    assert error["Error"]["Message"] == C.ON_DEMAND_THROTTLED_MESSAGE
    arn = lab.client.describe_table(TableName=lab.table_name)["Table"]["TableArn"]
    assert error["throttlingReasons"] == [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": arn}]
    assert throttling_reasons(caught.value) == ["TableWriteKeyRangeThroughputExceeded"]
    _add(lab, client, pk="OTHER")  # another partition is not throttled
    clock.now += 0.5  # 10 units refilled
    for _ in range(10):
        _add(lab, client)
    item = lab.client.get_item(TableName=lab.table_name, Key={"PK": {"S": "COUNTER"}, "SK": {"S": "X"}})
    assert item["Item"]["n"] == {"N": "30"}  # the throttled write wrote nothing


def test_endpoint__tagged_after_the_table_was_used__throttles_from_then_on(lab: Connection) -> None:
    """The throttle caches what it knows of a table; a TagResource after traffic still opts it in."""
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    for _ in range(30):  # untagged: never throttled, and now looked up and cached as such
        _add(lab, client)
    set_partition_scale(lab.client, lab.table_name, 0.01)
    for _ in range(10):
        _add(lab, client)
    with pytest.raises(ClientError) as caught:
        _add(lab, client)
    assert throttling_reasons(caught.value) == ["TableWriteKeyRangeThroughputExceeded"]


def test_endpoint__throttled__botocore_retries_it_as_throttling(lab: Connection, clock: FakeClock) -> None:
    """The SDK treats the error as throttling and retries it (RetryAttempts in the error)."""
    set_partition_scale(lab.client, lab.table_name, 0.01)
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 2})
    for _ in range(10):
        _add(lab, client)
    with pytest.raises(ClientError) as caught:
        _add(lab, client)  # the fake clock does not move, so the retry is throttled too
    assert caught.value.response["ResponseMetadata"]["RetryAttempts"] == 1


def test_endpoint__reads_of_hot_item__table_read_key_range_reason(lab: Connection) -> None:
    """Eventually consistent GetItems cost 0.5 units: 60 fit a 30-unit bucket, the 61st is throttled."""
    set_partition_scale(lab.client, lab.table_name, 0.01)
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    key = {"PK": {"S": "SETTINGS"}, "SK": {"S": "X"}}
    for _ in range(60):
        client.get_item(TableName=lab.table_name, Key=key)
    with pytest.raises(ClientError) as caught:
        client.get_item(TableName=lab.table_name, Key=key)
    assert throttling_reasons(caught.value) == ["TableReadKeyRangeThroughputExceeded"]


def test_set_partition_scale__none__removes_the_tag_and_the_throttle(lab: Connection) -> None:
    """Opting out removes the tag; the hot key is no longer throttled."""
    set_partition_scale(lab.client, lab.table_name, 0.01)
    set_partition_scale(lab.client, lab.table_name, None)
    arn = lab.client.describe_table(TableName=lab.table_name)["Table"]["TableArn"]
    assert SCALE_TAG not in {t["Key"] for t in lab.client.list_tags_of_resource(ResourceArn=arn)["Tags"]}
    client = lab.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    for _ in range(50):
        _add(lab, client)


def test_set_partition_scale__bad_scale__refused_before_any_call(lab: Connection) -> None:
    """A bad scale is a ValidationError and the table keeps no tag."""
    with pytest.raises(ValidationError):
        set_partition_scale(lab.client, lab.table_name, 2.0)
    arn = lab.client.describe_table(TableName=lab.table_name)["Table"]["TableArn"]
    assert SCALE_TAG not in {t["Key"] for t in lab.client.list_tags_of_resource(ResourceArn=arn)["Tags"]}


def test_endpoint__hooks_argument__endpoint_wide_scale_without_tags() -> None:
    """An engine with PartitionThrottle(scale) instead of the default throttles untagged tables."""
    clock = FakeClock()
    engine = DynamoEngine(clock=clock)  # the core alone, with the one hook this test gives it
    engine.add_hook(PartitionThrottle(scale=0.01, settings=engine_settings(engine)))
    with start_endpoint(engine=engine) as ep:
        conn = Connection("embedded", ep.url, C.LOCAL_REGION, f"labkit-tp-{uuid.uuid4().hex[:10]}")
        labkit.ensure_table(conn)
        client = conn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
        for _ in range(10):
            _add(conn, client)
        with pytest.raises(ClientError) as caught:
            _add(conn, client)
        assert caught.value.response["Error"]["Code"] == "ThrottlingException"
        labkit.delete_table(conn)


# --- storms and their picture ------------------------------------------------------------------


@pytest.mark.slow
def test_storm__hot_key_on_tagged_table__logs_throttled_attempts_the_storm_retried(tconn: Connection) -> None:
    """4 writers x 20 writes on one key at scale 0.01 (10 WCU/s): throttled attempts are logged and retried."""
    set_partition_scale(tconn.client, tconn.table_name, 0.01)
    run = storm(lambda client, w, s: _add(tconn, client), conn=tconn, threads=4, ops=20)
    assert run.throttled > 0
    assert len(run.attempts) == run.summary()["http_attempts"] >= 80
    assert run.summary()["sdk_retries"] == int(run.ops["retries"].sum())
    assert set(run.attempts["code"]) <= {"ok", "ThrottlingException"}
    fig = plot_storm({"hot": run, "again": run}, 0.01)
    assert len(fig.axes) == 4
    assert "hot: its one partition" in fig.axes[0].get_title()
    assert [cast(Any, line.get_ydata())[0] for line in fig.axes[0].get_lines()] == [10.0]  # one partition's limit
