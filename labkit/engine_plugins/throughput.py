"""Partition throughput for the embedded endpoint: a hot key really throttles (opt-in).

DynamoDB serves each partition at most :data:`~labkit.shared.constants.PARTITION_READ_UNITS_PER_SECOND`
read units and :data:`~labkit.shared.constants.PARTITION_WRITE_UNITS_PER_SECOND` write units a second,
in both capacity modes. :class:`PartitionThrottle` is an engine hook (see
:mod:`labkit.shared.engine_hooks`) that keeps one token bucket per (table, partition key value) and
direction, and answers a request whose partition's bucket is empty with the error DynamoDB
returns today:

* on-demand table: ``ThrottlingException`` with ``throttlingReasons``
  ``[{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": <table ARN>}]``
  (``TableReadKeyRangeThroughputExceeded`` for reads) — the field name as botocore's
  service model spells it for this exception;
* provisioned table: ``ProvisionedThroughputExceededException`` with ``ThrottlingReasons``, the
  same key-range reasons, or ``TableWriteProvisionedThroughputExceeded`` /
  ``TableReadProvisionedThroughputExceeded`` when the table's own provisioned capacity — plus
  up to :data:`~labkit.shared.constants.BURST_SECONDS` of unused capacity kept for bursts — runs out.

The model, stated:

* **one partition per partition key value.** Real DynamoDB puts many key values on one partition
  and splits busy partitions; in the lab each key value is its own partition, which is the best
  case for a hot key (its limit is all its own) and the worst case for nothing.
* **scaled down**: a Python client on a laptop cannot send 1,000 writes a second, so the limits are
  multiplied by ``scale`` (``scale=0.05`` -> 150 read and 50 write units a second per partition).
  Every number the lesson shows says its scale.
* a partition bucket holds ``depth_seconds`` (default 1) of its limit: burst capacity does not lift
  the per-partition limits (AWS: "burst capacity can't alleviate partition-level throttling").
* a request is admitted while its partitions' buckets are not empty and then pays what it
  consumed (the bucket may go into debt, as DynamoDB's do); units come from the engine's metering.
* not modelled: index partitions, adaptive capacity's split of a busy partition, account quotas,
  partial BatchGetItem/BatchWriteItem answers (a throttled batch fails as a whole), the
  on-demand "twice the previous peak" rule. Query/Scan pay after the fact (their partitions are
  known only once read).

Opt-in, off by default: tag a table ``labkit:partition-scale=0.05`` (TagResource — works from any
process and from the AWS CLI), or give an endpoint a throttle for all its tables:
``engine.add_hook(PartitionThrottle(scale=0.05, settings=engine_settings(engine)))``. The
composition root (:mod:`labkit.embedded`) gives every engine of the ``labkit`` profile a
``PartitionThrottle(settings=engine_settings(engine))`` (tags only); the ``dynamodb-local``
profile has none. This module imports no engine module: it talks to the engine through the
hook contract and the engine's public methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..shared import constants as C
from ..shared.engine_hooks import Rejection, RequestInfo
from ..shared.errors import ValidationError
from ..shared.validation import check_fraction, check_positive

if TYPE_CHECKING:
    from ..endpoint.engine import DynamoEngine

#: The table tag that opts a table in, with its scale as the value (``"0.05"``).
SCALE_TAG = "labkit:partition-scale"

READ, WRITE = "Read", "Write"


def check_scale(scale: object) -> float:
    """``scale`` (a number, or a tag's text such as ``"0.05"``) as a float in (0, 1], or a
    :class:`ValidationError` saying what to pass."""
    try:
        value: object = float(scale) if isinstance(scale, str) else scale
    except ValueError:
        value = scale
    return check_fraction("partition scale", value, hint="e.g. 0.05 for 1/20 of DynamoDB's per-partition limits")


def partition_limits(scale: float) -> tuple[float, float]:
    """(read units, write units) per second one partition serves at ``scale``."""
    s = check_scale(scale)
    return C.PARTITION_READ_UNITS_PER_SECOND * s, C.PARTITION_WRITE_UNITS_PER_SECOND * s


def describe_scale(scale: float) -> str:
    """One line for the lesson: the scale and what it means for one partition."""
    reads, writes = partition_limits(scale)
    return (
        f"partition scale {scale:g} (1/{1 / scale:g} of DynamoDB): one partition serves "
        f"{reads:g} read units/s and {writes:g} write units/s "
        f"(DynamoDB: {C.PARTITION_READ_UNITS_PER_SECOND:,} and {C.PARTITION_WRITE_UNITS_PER_SECOND:,})"
    )


#: A bucket counts its tokens in millionths of a unit: the same lab timeline (a storm's arrivals at
#: i / rate seconds) then gives the same levels whatever instant the engine's clock stood at when it
#: began, where float sums of ``rate * (now - updated)`` differ in their last bits (decision 141).
TOKEN_DIGITS = 6


class TokenBucket:
    """``rate`` tokens a second, at most ``capacity`` kept; starts full. Time comes from the caller."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updated = now

    def level(self, now: float) -> float:
        """Tokens available at ``now`` (negative while in debt)."""
        if now > self.updated:
            self.tokens = round(min(self.capacity, self.tokens + self.rate * (now - self.updated)), TOKEN_DIGITS)
            self.updated = now
        return self.tokens

    def spend(self, units: float, now: float) -> None:
        self.level(now)
        self.tokens = round(self.tokens - units, TOKEN_DIGITS)


@dataclass(frozen=True)
class TableSettings:
    """What the throttle needs to know about one table."""

    arn: str
    scale: float | None = None  # from the table's SCALE_TAG; None: not tagged
    provisioned: tuple[float, float] | None = None  # (RCU, WCU) of a PROVISIONED table


Settings = Callable[[str, str, str], "TableSettings | None"]


def engine_settings(engine: DynamoEngine) -> Settings:
    """Look tables up in ``engine``'s store: ARN, capacity mode and the scale tag.

    A tag value that is not a valid scale is ignored here (TagResource accepts any string);
    :func:`set_partition_scale` refuses it before the call.
    """

    cache: dict[tuple[str, str, str], TableSettings | None] = {}
    generation = [engine.generation]

    def settings(account: str, region: str, table: str) -> TableSettings | None:
        # Tables change only through control-plane requests, which move engine.generation (public).
        if generation[0] != engine.generation:
            cache.clear()
            generation[0] = engine.generation
        key = (account, region, table)
        if key not in cache:
            cache[key] = lookup(account, region, table)
        return cache[key]

    def lookup(account: str, region: str, table: str) -> TableSettings | None:
        found = engine.table_capacity(account, region, table)
        if found is None:
            return None
        arn, provisioned = found
        try:
            scale = check_scale(engine.table_tags(account, region, table)[SCALE_TAG])
        except (KeyError, ValidationError):
            scale = None
        return TableSettings(arn=arn, scale=scale, provisioned=provisioned)

    return settings


class PartitionThrottle:
    """The engine hook. ``scale`` applies to every table; a table's tag overrides it.

    With ``scale=None`` (the default, and what :mod:`labkit.embedded` gives every engine of the
    ``labkit`` profile) only tagged tables throttle. ``settings(account, region,
    table)`` looks a table up (:func:`engine_settings`; tests inject one).
    ``throttled`` counts rejections per (table, partition key value, "Read"/"Write").
    """

    def __init__(
        self,
        scale: float | None = None,
        *,
        settings: Settings,
        depth_seconds: float = 1.0,
    ) -> None:
        self.scale = None if scale is None else check_scale(scale)
        self.depth_seconds = check_positive("depth_seconds", depth_seconds)
        self.settings = settings
        self._partitions: dict[tuple[str, str, str, str, str], TokenBucket] = {}
        self._tables: dict[tuple[str, str, str, str], TokenBucket] = {}
        self.throttled: dict[tuple[str, str, str], int] = {}

    def _table(self, request: RequestInfo, table: str) -> tuple[TableSettings, float] | None:
        found = self.settings(request.account, request.region, table)
        if found is None:
            return None
        scale = found.scale if found.scale is not None else self.scale
        return None if scale is None else (found, scale)

    def _partition(self, request: RequestInfo, table: str, pk: str, kind: str, scale: float, now: float) -> TokenBucket:
        key = (request.account, request.region, table, pk, kind)
        bucket = self._partitions.get(key)
        reads, writes = partition_limits(scale)
        rate = reads if kind == READ else writes
        if bucket is None or bucket.rate != rate:
            bucket = self._partitions[key] = TokenBucket(rate, rate * self.depth_seconds, now)
        return bucket

    def _provisioned(self, request: RequestInfo, table: str, kind: str, units: float, now: float) -> TokenBucket:
        key = (request.account, request.region, table, kind)
        bucket = self._tables.get(key)
        if bucket is None or bucket.rate != units:
            bucket = self._tables[key] = TokenBucket(units, units * C.BURST_SECONDS, now)
        return bucket

    def wants(self, request: RequestInfo) -> bool:
        """Only requests that touch a throttled table (so untagged tables are not even metered)."""
        if self.scale is not None:
            return True
        return any(self._table(request, table) is not None for table, _ in (*request.reads, *request.writes))

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        for kind, pairs in ((WRITE, request.writes), (READ, request.reads)):
            for table, pk in pairs:
                found = self._table(request, table)
                if found is None:
                    continue
                settings, scale = found
                if self._partition(request, table, pk, kind, scale, now).level(now) <= 0:
                    key = (table, pk, kind)
                    self.throttled[key] = self.throttled.get(key, 0) + 1
                    return throttling_rejection(settings, kind, "KeyRangeThroughputExceeded")
                if settings.provisioned is not None:
                    units = settings.provisioned[0 if kind == READ else 1]
                    if self._provisioned(request, table, kind, units, now).level(now) <= 0:
                        return throttling_rejection(settings, kind, "ProvisionedThroughputExceeded")
        return None

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        for (table, pk), (read, write) in consumed.items():
            found = self._table(request, table)
            if found is None:
                continue
            settings, scale = found
            for kind, units in ((READ, read), (WRITE, write)):
                if units:
                    self._partition(request, table, pk, kind, scale, now).spend(units, now)
                    if settings.provisioned is not None:
                        rate = settings.provisioned[0 if kind == READ else 1]
                        self._provisioned(request, table, kind, rate, now).spend(units, now)


def throttling_rejection(settings: TableSettings, kind: str, limit: str) -> Rejection:
    """DynamoDB's answer to a throttled request, by the table's capacity mode."""
    reasons = [{"reason": f"Table{kind}{limit}", "resource": settings.arn}]
    if settings.provisioned is None:
        return Rejection("ThrottlingException", C.ON_DEMAND_THROTTLED_MESSAGE, extra={"throttlingReasons": reasons})
    return Rejection(
        "ProvisionedThroughputExceededException",
        C.PROVISIONED_THROUGHPUT_EXCEEDED_MESSAGE,
        extra={"ThrottlingReasons": reasons},
    )


def throttling_reasons(exc: BaseException) -> list[str]:
    """The ``reason`` of each throttling reason in a botocore ``ClientError`` (either spelling)."""
    response: Mapping[str, Any] = getattr(exc, "response", None) or {}
    reasons = response.get("ThrottlingReasons") or response.get("throttlingReasons") or []
    return [str(r.get("reason")) for r in reasons]


def set_partition_scale(client: Any, table_name: str, scale: float | None) -> None:
    """Opt ``table_name`` in (``scale`` in (0, 1]) or out (``None``) with the table tag.

    Checks ``scale`` before any call. The tag lives with the table, so an endpoint in another
    process (``labkit lab``, ``labkit serve``) throttles it too. DynamoDB ignores the tag.
    """
    value = None if scale is None else check_scale(scale)
    arn = client.describe_table(TableName=table_name)["Table"]["TableArn"]
    if value is None:
        client.untag_resource(ResourceArn=arn, TagKeys=[SCALE_TAG])
    else:
        client.untag_resource(ResourceArn=arn, TagKeys=[SCALE_TAG])  # moto appends duplicate keys
        client.tag_resource(ResourceArn=arn, Tags=[{"Key": SCALE_TAG, "Value": f"{value:g}"}])


__all__ = [
    "PartitionThrottle",
    "SCALE_TAG",
    "TOKEN_DIGITS",
    "TableSettings",
    "TokenBucket",
    "check_scale",
    "describe_scale",
    "engine_settings",
    "partition_limits",
    "set_partition_scale",
    "throttling_reasons",
    "throttling_rejection",
]
