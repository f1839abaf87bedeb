"""Global tables' plain data: a write's :class:`Stamp` (last writer wins compares them), a global
table's :class:`Group` of replicas, a pending :class:`Delivery`, and their form in the data directory
(:func:`record_of`, :func:`delivery_of`). Used by :mod:`.replication`. No moto import."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...shared.catalogue import Op

WireItem = dict[str, Any]

GLOBAL_TABLE_VERSION = "2019.11.21"
EVENTUAL = "EVENTUAL"
STRONG = "STRONG"
#: The default lag of a delivery: "typically within a second or less" (decision 182).
DEFAULT_LAG_SECONDS = 1.0
#: The operation named in the commit a delivery applies (never replicated again).
DELIVERED = Op.DELIVER_REPLICATIONS
#: "The request was rejected because one or more items in the request are being modified by a request
#: in another Region." (API reference: ReplicatedWriteConflictException)
CONFLICT_MESSAGE = (
    "The request was rejected because one or more items in the request are being modified by a request in another "
    "Region."
)


def key_id(key: Mapping[str, Any]) -> str:
    """A key as a stable string (binary values as they are given: base64 text or bytes made text)."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"), default=_text)


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not JSON: {type(value).__name__}")


@dataclass(frozen=True, order=True)
class Stamp:
    """When a write happened, in the order last writer wins compares: the engine's epoch, then its
    commit sequence (ties broken by which write reached the engine later)."""

    at: float
    seq: int


@dataclass
class Group:
    """The replicas of one global table (by account and table name): regions in the order they joined."""

    regions: list[str]
    consistency: str = EVENTUAL
    witness: str | None = None


@dataclass
class Delivery:
    """One write of one item, on its way from the region that took it to another replica."""

    id: int
    account: str
    table: str
    key: dict[str, Any]
    source: str
    target: str
    stamp: Stamp
    image: WireItem | None  # the item after the write; None: it was deleted
    operation: str
    due: float | None  # epoch seconds when the default policy delivers it; None: only when asked
    consistency: str = EVENTUAL

    def describe(self) -> dict[str, Any]:
        """As ``Labkit.ListReplications`` answers it."""
        return {
            "Id": self.id,
            "TableName": self.table,
            "Key": self.key,
            "From": self.source,
            "To": self.target,
            "WriteTime": self.stamp.at,
            "Sequence": self.stamp.seq,
            "Operation": self.operation,
            "Deletes": self.image is None,
            "Due": self.due,
            "MultiRegionConsistency": self.consistency,
        }


def record_of(d: Delivery) -> dict[str, Any]:
    return {
        "id": d.id,
        "a": d.account,
        "n": d.table,
        "k": d.key,
        "from": d.source,
        "to": d.target,
        "stamp": [d.stamp.at, d.stamp.seq],
        "image": d.image,
        "op": d.operation,
        "due": d.due,
        "c": d.consistency,
    }


def delivery_of(raw: Mapping[str, Any]) -> Delivery:
    at, seq = raw["stamp"]
    return Delivery(
        int(raw["id"]),
        str(raw["a"]),
        str(raw["n"]),
        dict(raw["k"]),
        str(raw["from"]),
        str(raw["to"]),
        Stamp(float(at), int(seq)),
        raw["image"],
        str(raw["op"]),
        raw["due"],
        str(raw["c"]),
    )


__all__ = [
    "CONFLICT_MESSAGE",
    "DEFAULT_LAG_SECONDS",
    "DELIVERED",
    "EVENTUAL",
    "GLOBAL_TABLE_VERSION",
    "STRONG",
    "Delivery",
    "Group",
    "Stamp",
    "WireItem",
    "delivery_of",
    "key_id",
    "record_of",
]
