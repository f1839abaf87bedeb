"""ConsumedCapacity as DynamoDB computes it, for requests that ask (TOTAL or INDEXES).

Private to :mod:`labkit.endpoint`; runs under its lock, reading moto's items
before and after the request. Sizes and units come from :mod:`labkit.capacity`:

* GetItem: 4 KB read steps on the whole item (0.5 eventual, 1 strong; a missing item the minimum);
* PutItem/UpdateItem/DeleteItem: 1 KB write steps on the larger of old and new item;
* TransactWriteItems/TransactGetItems: twice that per item (a ConditionCheck: a transactional read);
* Query/Scan: read steps on the total size read, before any FilterExpression;
* BatchGetItem/BatchWriteItem: per item, summed per table;
* secondary indexes: a write that adds, changes or removes an index entry also writes the
  index (two writes when the index key changes); a Query/Scan of an index reads the index.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .capacity import item_size, read_units, total_read_units, write_units

WireItem = Mapping[str, Any]

METERED = {
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "TransactWriteItems",
    "TransactGetItems",
    "BatchGetItem",
    "BatchWriteItem",
}
_SINGLE = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"}


@dataclass
class Use:
    """Units one request consumed on one table or index (index None = the table itself)."""

    table: str
    index: str | None = None
    local: bool = False
    read: float = 0.0
    write: float = 0.0
    shares: dict[str, float] | None = None  # partition key value -> share of these units (hooks)


@dataclass
class Target:
    """One item a write touches: where, and the item before the request."""

    table: str
    key: dict[str, Any]
    before: WireItem | None
    transactional: bool = False
    check_only: bool = False


def _units(read: float, write: float) -> dict[str, float]:
    units = {"CapacityUnits": read + write}
    if read:
        units["ReadCapacityUnits"] = read
    if write:
        units["WriteCapacityUnits"] = write
    return units


def report(uses: Iterable[Use], mode: str) -> list[dict[str, Any]]:
    """DynamoDB's ConsumedCapacity entries, one per table, in first-use order."""
    by_table: dict[str, list[Use]] = {}
    for use in uses:
        by_table.setdefault(use.table, []).append(use)
    entries = []
    for table, table_uses in by_table.items():
        read = sum(u.read for u in table_uses)
        write = sum(u.write for u in table_uses)
        entry: dict[str, Any] = {"TableName": table, **_units(read, write)}
        if mode == "INDEXES":
            own = [u for u in table_uses if u.index is None]
            entry["Table"] = _units(
                sum((u.read for u in own), 0.0), sum((u.write for u in own), 0.0)
            )
            for use in table_uses:
                if use.index is not None:
                    group = "LocalSecondaryIndexes" if use.local else "GlobalSecondaryIndexes"
                    slot = entry.setdefault(group, {}).setdefault(use.index, {"r": 0.0, "w": 0.0})
                    slot["r"] += use.read
                    slot["w"] += use.write
            for group in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                for name, slot in entry.get(group, {}).items():
                    entry[group][name] = _units(slot["r"], slot["w"])
        entries.append(entry)
    return entries


def _index_entry(item: WireItem, index: Any, table_keys: list[str]) -> dict[str, Any] | None:
    """The entry ``item`` has in ``index`` (None if it lacks an index key attribute)."""
    index_keys = [a["AttributeName"] for a in index.schema]
    if any(k not in item for k in index_keys):
        return None
    projection = index.projection or {}
    kind = projection.get("ProjectionType", "ALL")
    if kind == "ALL":
        return dict(item)
    keep = set(table_keys) | set(index_keys)
    if kind == "INCLUDE":
        keep |= set(projection.get("NonKeyAttributes", []))
    return {k: v for k, v in item.items() if k in keep}


def index_writes(table: Any, before: WireItem | None, after: WireItem | None) -> list[Use]:
    """Write units each secondary index spends because an item went from ``before`` to ``after``."""
    uses = []
    table_keys = [a["AttributeName"] for a in table.schema]
    indexes = [(i, False) for i in table.global_indexes or []] + [
        (i, True) for i in table.indexes or []
    ]
    for index, local in indexes:
        old = _index_entry(before, index, table_keys) if before else None
        new = _index_entry(after, index, table_keys) if after else None
        if old is None and new is None or old == new:
            continue
        if old is None or new is None:
            units = write_units(item_size(old or new))
        elif any(old[a["AttributeName"]] != new[a["AttributeName"]] for a in index.schema):
            units = write_units(item_size(old)) + write_units(item_size(new))
        else:
            units = write_units(max(item_size(old), item_size(new)))
        uses.append(Use(table.name, index.name, local, write=units))
    return uses


class Meter:
    """Reads the touched items before a request and turns the difference into ConsumedCapacity."""

    def __init__(
        self, core: Any, who: tuple[str, str], operation: str, params: Mapping[str, Any], always: bool = False
    ):
        self.core = core
        self.who = who
        self.operation = operation
        self.params = params
        self.mode = str(params.get("ReturnConsumedCapacity", "NONE"))
        self.targets: list[Target] = []
        self.always = always  # measure even if the request did not ask (engine hooks need it)
        self.uses: list[Use] = []
        if self.wanted or always:
            self.targets = list(self._targets())
            core.take_reads(who)

    @property
    def wanted(self) -> bool:
        return self.mode in ("TOTAL", "INDEXES")

    def _target(self, table: str, key: Mapping[str, Any], **flags: bool) -> Target:
        return Target(table, dict(key), self.core.item(self.who, table, key), **flags)

    def _targets(self) -> Iterable[Target]:
        p, op = self.params, self.operation
        if op == "PutItem":
            yield self._target(
                p["TableName"], self.core.key_of(self.who, p["TableName"], p["Item"])
            )
        elif op in ("UpdateItem", "DeleteItem"):
            yield self._target(p["TableName"], p["Key"])
        elif op == "TransactWriteItems":
            for action in p["TransactItems"]:
                ((kind, body),) = action.items()
                key = body.get("Key") or self.core.key_of(self.who, body["TableName"], body["Item"])
                yield self._target(
                    body["TableName"], key, transactional=True, check_only=kind == "ConditionCheck"
                )
        elif op == "BatchWriteItem":
            for table, requests in p["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        key = self.core.key_of(self.who, table, request["PutRequest"]["Item"])
                    else:
                        key = request["DeleteRequest"]["Key"]
                    yield self._target(table, key)

    def _uses(self) -> Iterable[Use]:
        p, op, core, who = self.params, self.operation, self.core, self.who
        if op == "GetItem":
            size = item_size(core.item(who, p["TableName"], p["Key"]))
            yield Use(
                p["TableName"],
                read=read_units(size, consistent=bool(p.get("ConsistentRead"))),
                shares=_share(core, who, p["TableName"], p["Key"]),
            )
        elif op in ("Query", "Scan"):
            for table, index, items in core.take_reads(who):
                sizes = [item_size(i) for i in items]
                units = total_read_units(sizes, consistent=bool(p.get("ConsistentRead")))
                shares = _shares_by_size(core, who, table, items) if index is None else None
                yield Use(table, index, self._is_local(table, index), read=units, shares=shares)
        elif op == "TransactGetItems":
            for action in p["TransactItems"]:
                get = action["Get"]
                size = item_size(core.item(who, get["TableName"], get["Key"]))
                yield Use(
                    get["TableName"],
                    read=2 * read_units(size, consistent=True),
                    shares=_share(core, who, get["TableName"], get["Key"]),
                )
        elif op == "BatchGetItem":
            for table, request in p["RequestItems"].items():
                consistent = bool(request.get("ConsistentRead"))
                for key in request["Keys"]:
                    size = item_size(core.item(who, table, key))
                    yield Use(
                        table,
                        read=read_units(size, consistent=consistent),
                        shares=_share(core, who, table, key),
                    )
        else:
            for t in self.targets:
                share = _share(core, who, t.table, t.key)
                if t.check_only:
                    units = 2 * read_units(item_size(t.before), consistent=True)
                    yield Use(t.table, read=units, shares=share)
                    continue
                after = core.item(who, t.table, t.key)
                size = max(item_size(t.before), item_size(after))
                yield Use(t.table, write=write_units(size, transactional=t.transactional), shares=share)
                table = core.table(who, t.table)
                if table is not None:
                    yield from index_writes(table, t.before, after)

    def _is_local(self, table: str, index: str | None) -> bool:
        moto_table = self.core.table(self.who, table)
        return (
            index is not None
            and moto_table is not None
            and any(i.name == index for i in moto_table.indexes or [])
        )

    def finish(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Replace whatever capacity moto wrote into a successful response with DynamoDB's."""
        payload.pop("ConsumedCapacity", None)
        payload.pop("ConsumedCapacityUnits", None)
        if self.always and not self.wanted:
            self.uses = list(self._uses())
        if self.wanted:
            self.uses = list(self._uses())
            entries = report(self.uses, self.mode)
            if self.operation in _SINGLE:
                payload["ConsumedCapacity"] = (
                    entries[0]
                    if entries
                    else {"TableName": self.params.get("TableName"), "CapacityUnits": 0.0}
                )
            else:
                payload["ConsumedCapacity"] = entries
        return payload

    def by_partition(self) -> dict[tuple[str, str], tuple[float, float]]:
        """(table, partition key value) -> (read, write) units of the base table (for engine hooks)."""
        out: dict[tuple[str, str], tuple[float, float]] = {}
        for use in self.uses:
            if use.index is not None or not use.shares:
                continue
            for pk, share in use.shares.items():
                r, w = out.get((use.table, pk), (0.0, 0.0))
                out[(use.table, pk)] = (r + use.read * share, w + use.write * share)
        return out

    def replay(self, keys: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
        """A repeated ClientRequestToken: DynamoDB reports the read units of reading the items."""
        uses = [
            Use(
                table,
                read=read_units(
                    item_size(self.core.item(self.who, table, json.loads(key))), consistent=True
                ),
            )
            for table, key in keys
        ]
        return report(uses, self.mode)


def partition_value(core: Any, who: tuple[str, str], table: str, key: Mapping[str, Any]) -> str | None:
    """The partition key value of ``key`` (or of a whole item) as a plain string; None if unknown."""
    found = core.table(who, table)
    if found is None or not isinstance(key, Mapping):
        return None
    value = key.get(found.hash_key_attr)
    if not isinstance(value, Mapping) or len(value) != 1:
        return None
    ((_, raw),) = value.items()
    return raw if isinstance(raw, str) else json.dumps(raw, default=str)


def _share(core: Any, who: tuple[str, str], table: str, key: Mapping[str, Any]) -> dict[str, float] | None:
    pk = partition_value(core, who, table, key)
    return None if pk is None else {pk: 1.0}


def _shares_by_size(core: Any, who: tuple[str, str], table: str, items: list[Any]) -> dict[str, float] | None:
    sizes: dict[str, float] = {}
    for item in items:
        pk = partition_value(core, who, table, item)
        if pk is not None:
            sizes[pk] = sizes.get(pk, 0.0) + max(1, item_size(item))
    total = sum(sizes.values())
    return {pk: size / total for pk, size in sizes.items()} if total else None
