"""The sharded counter: keys, increments, one-BatchGetItem totals, choosing N, bad input."""

from __future__ import annotations

import random
from typing import Any

import pytest

from labkit.patterns.counter import (
    ShardedCounter,
    choose_shards,
    increment,
    read_shards,
    read_total,
    tradeoffs,
)
from labkit.races import stress
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError


class CountingClient:
    """Wraps a client and records the operations called (to prove 'before any call')."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.client, name)


def test_key__shard_i__own_partition_key_per_shard() -> None:
    """Shard 3 of 'page-views' is PK=COUNTER#page-views#3, SK=SHARD."""
    counter = ShardedCounter("page-views", 4)
    assert counter.key(3) == {"PK": {"S": "COUNTER#page-views#3"}, "SK": {"S": C.COUNTER_SK}}
    assert len({k["PK"]["S"] for k in counter.all_keys()}) == 4


@pytest.mark.parametrize("shards", [0, -1, 101, 2.5, "4", True])
def test_counter__bad_shard_count__validation_error(shards: Any) -> None:
    """Zero, negative, fractional or more than one BatchGetItem can read: refused."""
    with pytest.raises(
        ValidationError, match=r"^shards must be an int from 1 to 100, not .*; one BatchGetItem reads them all"
    ):
        ShardedCounter("page-views", shards)


@pytest.mark.parametrize("name", ["", "  ", "a#b", " views", "views\n", 7, "x" * 256])
def test_counter__invalid_name__validation_error(name: Any) -> None:
    """A name that cannot be part of the key is refused with a reason."""
    with pytest.raises(ValidationError, match="counter name"):
        ShardedCounter(name, 4)


def test_increment__bad_shard_or_amount__refused_before_any_call(tconn: Connection) -> None:
    """A shard outside 0..N-1 or a non-integer amount makes no call."""
    spy = CountingClient(tconn.client)
    counter = ShardedCounter("views", 4)
    with pytest.raises(ValidationError, match=r"shard must be an int from 0 to 3, not 4; counter '.*' has 4"):
        increment(spy, tconn.table_name, counter, shard=4)
    with pytest.raises(ValidationError, match="by must be an int, not "):
        increment(spy, tconn.table_name, counter, by=1.5)  # type: ignore[arg-type]
    assert spy.calls == []


def test_read_total__sum_of_shards__one_batch_get_item(tconn: Connection) -> None:
    """Increments on several shards add up; a total is ONE BatchGetItem; unwritten shards count 0."""
    counter = ShardedCounter("views", 8)
    for shard, by in [(0, 1), (3, 2), (3, 5), (7, 10)]:
        increment(tconn.client, tconn.table_name, counter, by, shard=shard)
    spy = CountingClient(tconn.client)
    assert read_total(spy, tconn.table_name, counter, consistent=True) == 18
    assert spy.calls == ["batch_get_item"]
    shards = read_shards(tconn.client, tconn.table_name, counter, consistent=True)
    assert shards == {0: 1, 1: 0, 2: 0, 3: 7, 4: 0, 5: 0, 6: 0, 7: 10}


def test_increment__random_shard__spreads_and_total_is_exact(tconn: Connection) -> None:
    """200 random increments from 8 threads touch several shards and the total is exactly 200."""
    counter = ShardedCounter("storm", 16)

    def op(client: Any, worker: int, seq: int) -> int:
        return increment(client, tconn.table_name, counter, rng=random.Random(worker * 1000 + seq))

    df = stress(op, conn=tconn, threads=8, ops=25)
    assert df["ok"].all()
    assert df["result"].nunique() > 8
    assert read_total(tconn.client, tconn.table_name, counter, consistent=True) == 200


def test_shard_for__computed_suffix__stable_per_writer_and_in_range() -> None:
    """The same writer id always maps to the same shard."""
    counter = ShardedCounter("views", 10)
    assert counter.shard_for("web-1") == counter.shard_for("web-1")
    assert {counter.shard_for(f"web-{i}") for i in range(200)} <= set(range(10))


def test_choose_shards__target_rate__fewest_shards_at_headroom() -> None:
    """400 writes/s at scale 0.05 (50 WCU/s a partition), planned at half: 16 shards."""
    assert choose_shards(400, scale=0.05) == 16
    assert choose_shards(400, scale=0.05, headroom=1.0) == 8
    assert choose_shards(10) == 1  # on real DynamoDB, 10 writes/s needs no sharding
    assert choose_shards(3000, units_per_write=2) == 12


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target_writes_per_second": 0}, "positive"),
        ({"target_writes_per_second": 100, "headroom": 0}, "headroom"),
        ({"target_writes_per_second": 10_000, "scale": 0.05}, "more than one BatchGetItem"),
    ],
)
def test_choose_shards__bad_input__validation_error(kwargs: dict[str, Any], match: str) -> None:
    """Non-positive rates, no headroom, or more shards than one read can sum: refused."""
    with pytest.raises(ValidationError, match=match):
        choose_shards(**kwargs)


def test_tradeoffs__more_shards__less_per_shard_more_read_units() -> None:
    """Write spread falls as 1/N; read units grow as N (0.5 eventual, 1 strong per small item); the plan
    column applies choose_shards' rule: at most half the limit is within plan, up to the limit has no
    headroom (8 shards at a share of exactly 1.00 is not a plan), above it throttles."""
    df = tradeoffs(400, (1, 4, 8, 16), scale=0.05)
    assert list(df["writes_per_shard_per_s"]) == [400.0, 100.0, 50.0, 25.0]
    assert list(df["plan"]) == ["throttles", "throttles", "no headroom", "within plan"]
    assert choose_shards(400, scale=0.05) == 16 and df.loc[df["shards"] == 16, "plan"].item() == "within plan"
    assert list(df["read_units_eventual"]) == [0.5, 2.0, 4.0, 8.0]
    assert list(df["read_units_strong"]) == [1.0, 4.0, 8.0, 16.0]
