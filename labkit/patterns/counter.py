"""A sharded counter: N items take the writes, a reader sums them with one BatchGetItem.

A counter written on every request (page views, likes) must not live in one item: all its writes
land on one partition, and a partition serves at most
:data:`~labkit.shared.constants.PARTITION_WRITE_UNITS_PER_SECOND` write units a second. Spread it:

* shard ``i`` of counter ``name`` is ``PK="COUNTER#<name>#<i>"``, ``SK="SHARD"``, count in ``n``
  — each shard its own partition key, so its own partition;
* a writer ``ADD n :by`` to ONE shard — a random one, or one computed from the writer
  (:func:`shard_for`), which keeps one writer's increments in order on one shard;
* a reader fetches all N shards with one BatchGetItem and sums them (eventually consistent: half
  the read units, may miss the latest writes; strongly consistent: exact at the time of each read).

The price: a read costs N items instead of one, and the total is a sum of N reads that are not
one snapshot. :func:`tradeoffs` shows it as data; :func:`choose_shards` picks N from a write rate.
Every function takes a botocore DynamoDB client and a table name, so the race lab can drive it.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..shared import constants as C
from ..shared.capacity import item_size, read_units, write_units
from ..shared.errors import ValidationError
from ..shared.validation import check_fraction, check_int, check_positive, check_text

if TYPE_CHECKING:
    import pandas as pd

#: Longest counter name: the partition key must stay under DynamoDB's 2,048 bytes with room for
#: the prefix and the shard number.
MAX_NAME_BYTES = 255


def check_name(name: object) -> str:
    """``name`` if it can be part of a key, else a :class:`ValidationError` that says why."""
    text = check_text("counter name", name, hint="e.g. 'page-views'")
    if "#" in text:
        raise ValidationError(f"counter name {text!r} contains '#', the key separator; use e.g. '-' instead")
    if text != text.strip() or any(not ch.isprintable() for ch in text):
        raise ValidationError(f"counter name {text!r} has surrounding spaces or control characters; remove them")
    if len(text.encode("utf-8")) > MAX_NAME_BYTES:
        raise ValidationError(f"counter name is {len(text.encode())} bytes; keep it to {MAX_NAME_BYTES}")
    return text


def check_shards(shards: object) -> int:
    """``shards`` if it is a whole number from 1 to the BatchGetItem limit, else a ValidationError."""
    return check_int(
        "shards", shards, least=1, most=C.MAX_BATCH_GET_KEYS, hint="one BatchGetItem reads them all when summing"
    )


@dataclass(frozen=True)
class ShardedCounter:
    """Counter ``name`` spread over ``shards`` items. Checked on construction, before any call."""

    name: str
    shards: int

    def __post_init__(self) -> None:
        check_name(self.name)
        check_shards(self.shards)

    def key(self, shard: int) -> dict[str, Any]:
        """The primary key of one shard, in DynamoDB's wire form."""
        check_int("shard", shard, least=0, most=self.shards - 1, hint=f"counter {self.name!r} has {self.shards}")
        return {"PK": {"S": f"{C.COUNTER_PREFIX}{self.name}#{shard}"}, "SK": {"S": C.COUNTER_SK}}

    def all_keys(self) -> list[dict[str, Any]]:
        return [self.key(i) for i in range(self.shards)]

    def shard_for(self, writer: object) -> int:
        """A computed suffix: the same writer always lands on the same shard (crc32 of its id)."""
        return zlib.crc32(str(writer).encode("utf-8")) % self.shards


def increment(
    client: Any,
    table_name: str,
    counter: ShardedCounter,
    by: int = 1,
    *,
    shard: int | None = None,
    rng: random.Random | None = None,
) -> int:
    """``ADD n :by`` on one shard (``shard``, or a random one); returns the shard written."""
    check_int("by", by)
    chosen = (rng or random).randrange(counter.shards) if shard is None else shard
    key = counter.key(chosen)  # checks the shard before any call
    client.update_item(
        TableName=table_name,
        Key=key,
        UpdateExpression="ADD n :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )
    return chosen


def read_shards(client: Any, table_name: str, counter: ShardedCounter, *, consistent: bool = False) -> dict[int, int]:
    """Each shard's count (0 for a shard never written), from one BatchGetItem.

    Keys DynamoDB leaves unprocessed (throttling) are asked for again until none are left.
    """
    index = {json_key(counter.key(i)): i for i in range(counter.shards)}
    counts = dict.fromkeys(range(counter.shards), 0)
    request: dict[str, Any] = {table_name: {"Keys": counter.all_keys(), "ConsistentRead": consistent}}
    while request:
        answer = client.batch_get_item(RequestItems=request)
        for item in answer.get("Responses", {}).get(table_name, []):
            shard = index[json_key({"PK": item["PK"], "SK": item["SK"]})]
            counts[shard] = int(item.get("n", {"N": "0"})["N"])
        request = answer.get("UnprocessedKeys") or {}
    return counts


def read_total(client: Any, table_name: str, counter: ShardedCounter, *, consistent: bool = False) -> int:
    """The counter's value: the sum of its shards (one BatchGetItem)."""
    return sum(read_shards(client, table_name, counter, consistent=consistent).values())


def json_key(key: Mapping[str, Any]) -> tuple[str, str]:
    return str(key["PK"]["S"]), str(key["SK"]["S"])


def choose_shards(
    target_writes_per_second: float,
    *,
    scale: float = 1.0,
    units_per_write: float = 1.0,
    headroom: float = 0.5,
) -> int:
    """Fewest shards that keep every shard under ``headroom`` of its partition's write limit.

    ``scale`` is the lab's partition scale (1 on DynamoDB); ``headroom`` leaves room for uneven
    random spread and other writers (0.5: plan each partition at half its limit).
    """
    from ..engine_plugins.throughput import partition_limits

    check_positive("target_writes_per_second", target_writes_per_second, "writes per second")
    check_fraction("headroom", headroom, hint="e.g. 0.5")
    check_positive("units_per_write", units_per_write, "write units")
    per_shard = partition_limits(scale)[1] * headroom
    shards = max(1, math.ceil(target_writes_per_second * units_per_write / per_shard))
    if shards > C.MAX_BATCH_GET_KEYS:
        raise ValidationError(
            f"{target_writes_per_second:g} writes/s needs {shards} shards, more than one BatchGetItem "
            f"reads ({C.MAX_BATCH_GET_KEYS}); aggregate in a stream instead of summing on read"
        )
    return shards


def tradeoffs(
    target_writes_per_second: float,
    shard_counts: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
    *,
    scale: float = 1.0,
    headroom: float = 0.5,
) -> pd.DataFrame:
    """Write spread vs read cost vs staleness for each shard count, as a table.

    Columns: shards; writes/s each shard takes; that as a share of a partition's write limit;
    ``plan``: ``"within plan"`` at most ``headroom`` of the limit (the rule :func:`choose_shards`
    plans by), ``"no headroom"`` above it but at most the limit (an even spread would just fit; a
    random one will throttle some shards), ``"throttles"`` above the limit; read units for one total
    (eventually / strongly consistent); how many separately-read items a total is made of (each may
    be stale when read eventually).
    """
    import pandas as pd

    from ..engine_plugins.throughput import partition_limits

    check_fraction("headroom", headroom, hint="e.g. 0.5")
    limit = partition_limits(scale)[1]
    shard_size = item_size(
        {"PK": {"S": f"{C.COUNTER_PREFIX}page-views#00"}, "SK": {"S": C.COUNTER_SK}, "n": {"N": "1"}}
    )
    rows = []
    for n in shard_counts:
        check_shards(n)
        per_shard = target_writes_per_second / n
        share = per_shard * write_units(shard_size) / limit
        plan = "within plan" if share <= headroom else "no headroom" if share <= 1 else "throttles"
        rows.append(
            {
                "shards": n,
                "writes_per_shard_per_s": round(per_shard, 1),
                "share_of_partition_limit": round(share, 2),
                "plan": plan,
                "read_units_eventual": n * read_units(shard_size),
                "read_units_strong": n * read_units(shard_size, consistent=True),
                "items_per_total": n,
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "MAX_NAME_BYTES",
    "ShardedCounter",
    "check_name",
    "check_shards",
    "choose_shards",
    "increment",
    "read_shards",
    "read_total",
    "tradeoffs",
]
