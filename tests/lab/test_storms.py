"""Storms on the lab's clock (labkit/lab/storms.py, decision 141): the same attempts throttled, the same
bars, on an idle and on a saturated machine, whatever instant the engine's clock stood at."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import labkit
from labkit.embedded import start_endpoint
from labkit.engine_plugins.throughput import set_partition_scale
from labkit.lab.storms import Storm, _partition_of, storm
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from tests.endpoint.fake_clock import FakeClock
from tests.helpers import busy_loops

SCALE = 0.01  # one partition: 10 write units a second, a bucket of 10
BUSY_LOOPS = 4  # per the issue: four busy-loop processes (a load of about 9 on 2 cores with the rest)


def _hot_storm(conn: Connection) -> Storm:
    """4 workers x 20 ADDs on one key at 100 a second, on a fresh table at SCALE."""
    table = f"labkit-storm-{uuid.uuid4().hex[:10]}"
    labkit.ensure_table(conn, table)
    on = Connection(conn.backend, conn.endpoint_url, conn.region, table)
    set_partition_scale(on.client, table, SCALE)

    def add(client: Any, worker: int, seq: int) -> None:
        client.update_item(
            TableName=table,
            Key={"PK": {"S": "HOT"}, "SK": {"S": "X"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    try:
        return storm(add, conn=on, threads=4, ops=20, rate=100)
    finally:
        labkit.delete_table(on)


def _assert_same(one: Storm, other: Storm) -> None:
    assert other.throttled == one.throttled
    pd.testing.assert_frame_equal(other.attempts, one.attempts)
    pd.testing.assert_frame_equal(other.bars(), one.bars())
    pd.testing.assert_frame_equal(other.ops, one.ops)


@pytest.fixture
def saturated() -> Iterator[None]:
    """BUSY_LOOPS shell busy loops for the test's duration."""
    with busy_loops(BUSY_LOOPS):
        yield


def test_storm__hot_key__throttles_by_the_plan_in_lab_seconds(conn: Connection) -> None:
    """80 writes arriving at 100/s on a partition of 10/s: the first 10 empty the bucket (it starts
    full), then about 1 in 10 arrivals finds a unit refilled; the rest are throttled and retried."""
    run = _hot_storm(conn)
    first = run.ops.sort_values("start")
    assert list(first["start"].iloc[:3]) == [0.0, 0.01, 0.02]
    assert run.attempts["time"].is_monotonic_increasing
    assert run.throttled > 40 and set(run.attempts["code"]) == {"ok", "ThrottlingException"}
    assert int(run.ops["ok"].sum()) == len(run.attempts) - run.throttled
    assert (run.ops["retries"] <= C.SDK_ATTEMPTS - 1).all() and run.summary()["sdk_retries"] > 0


def test_storm__engine_clock_far_apart__same_attempts_and_bars() -> None:
    """The same plan from two very different instants of the engine's clock (100 s and 10^6 s + a
    fraction): the same attempts throttled, the same bars (the buckets count in millionths of a unit)."""
    runs = []
    for start in (100.0, 1_000_000.123456789):
        with start_endpoint(clock=FakeClock(start)) as ep:
            runs.append(_hot_storm(Connection("embedded", ep.url, C.LOCAL_REGION)))
    _assert_same(*runs)


@pytest.mark.slow
def test_storm__idle_then_cpu_saturated__same_throttle_counts_and_figure_data(
    conn: Connection, request: pytest.FixtureRequest
) -> None:
    """Issue 42: the storm throttles the same attempts on an idle and on a saturated machine (four
    busy loops): identical counts, attempts, per-operation rows and the figure's per-second bars."""
    idle = _hot_storm(conn)
    request.getfixturevalue("saturated")
    loaded = _hot_storm(conn)
    assert idle.throttled > 0
    _assert_same(idle, loaded)


def test_storm__writes_on_two_keys__each_attempt_names_its_partition(conn: Connection) -> None:
    """3 workers x 4 writes, workers 0 and 2 on key K0 and worker 1 on K1: each attempt logs the
    partition key value it sent, the busiest partition is K0, and bars(partition=) counts only its own."""
    table = f"labkit-storm-{uuid.uuid4().hex[:10]}"
    labkit.ensure_table(conn, table)
    on = Connection(conn.backend, conn.endpoint_url, conn.region, table)

    def put(client: Any, worker: int, seq: int) -> None:
        client.put_item(TableName=table, Item={"PK": {"S": f"K{worker % 2}"}, "SK": {"S": str(seq)}})

    try:
        run = storm(put, conn=on, threads=3, ops=4, rate=100)
    finally:
        labkit.delete_table(on)
    k0, k1 = '{"S": "K0"}', '{"S": "K1"}'
    assert run.attempts["partition"].value_counts().to_dict() == {k0: 8, k1: 4}
    assert run.partitions == 2 and run.busiest_partition() == k0
    assert run.bars(1.0, partition=k1)["accepted"].sum() == 4.0
    assert run.bars(1.0)["accepted"].sum() == 12.0


@pytest.mark.parametrize(
    ("body", "partition"),
    [
        (b'{"TableName": "t", "Key": {"PK": {"S": "A"}, "SK": {"S": "1"}}}', '{"S": "A"}'),
        (b'{"TableName": "t", "Item": {"PK": {"N": "7"}}}', '{"N": "7"}'),
        (b'{"TableName": "t", "KeyConditionExpression": "PK = :pk"}', None),
        (b"not json", None),
        (None, None),
    ],
)
def test_partition_of__request_body__the_key_it_addresses_or_none(body: bytes | None, partition: str | None) -> None:
    """A request's partition is its Key's (or Item's) PK value as JSON; a request naming no single item has none."""
    assert _partition_of(body) == partition
