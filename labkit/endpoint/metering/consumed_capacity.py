"""ConsumedCapacity as DynamoDB computes it: a pure function of plain data.

Input: the operation, its parameters, the validated :class:`~labkit.endpoint.plan.Plan`,
what the store (:mod:`~labkit.endpoint.store.moto_store`) reported (items before/after, items read) and the tables'
schemas. Sizes and units come from :mod:`labkit.shared.capacity`:

* GetItem: 4 KB read steps on the whole item (0.5 eventual, 1 strong; a missing item the minimum);
* PutItem/UpdateItem/DeleteItem: 1 KB write steps on the larger of old and new item;
* TransactWriteItems/TransactGetItems: twice that per item (a ConditionCheck: a transactional read);
* Query/Scan: read steps on the total size read, before any FilterExpression;
* BatchGetItem/BatchWriteItem: per item, summed per table;
* secondary indexes: a write that adds, changes or removes an index entry also writes the
  index (two writes when the index key changes); a Query/Scan of an index reads the index.

Besides DynamoDB's report, :func:`meter` returns the base-table units per (table, partition
key): what hooks (a partition throttle) see.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...shared.capacity import item_size, read_units, total_read_units, write_units
from ...shared.catalogue import SINGLE, WHOLE_TABLE
from ...shared.partition_keys import canonical
from ..plan import Plan
from ..schema import IndexSchema, TableSchema

WireItem = Mapping[str, Any]


@dataclass
class Use:
    """Units one request consumed on one table or index (index None = the table itself)."""

    table: str
    index: str | None = None
    local: bool = False
    read: float = 0.0
    write: float = 0.0
    pk: str | None = None  # the base table's partition key, when known


@dataclass
class Metered:
    """DynamoDB's ConsumedCapacity value (None if not asked for) and units per partition."""

    report: Any = None
    partitions: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)


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
        entry: dict[str, Any] = {
            "TableName": table,
            **_units(sum(u.read for u in table_uses), sum(u.write for u in table_uses)),
        }
        if mode == "INDEXES":
            own = [u for u in table_uses if u.index is None]
            entry["Table"] = _units(sum((u.read for u in own), 0.0), sum((u.write for u in own), 0.0))
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


def _index_entry(item: WireItem, index: IndexSchema, table_keys: tuple[str, ...]) -> dict[str, Any] | None:
    """The entry ``item`` has in ``index`` (None if it lacks an index key attribute)."""
    index_keys = [name for name, _ in index.keys]
    if any(k not in item for k in index_keys):
        return None
    if index.projection == "ALL":
        return dict(item)
    keep = set(table_keys) | set(index_keys)
    if index.projection == "INCLUDE":
        keep |= set(index.include)
    return {k: v for k, v in item.items() if k in keep}


def index_writes(schema: TableSchema, before: WireItem | None, after: WireItem | None) -> list[Use]:
    """Write units each secondary index spends because an item went from ``before`` to ``after``."""
    uses = []
    for index in schema.indexes:
        old = _index_entry(before, index, schema.key_names) if before else None
        new = _index_entry(after, index, schema.key_names) if after else None
        if old is None and new is None or old == new:
            continue
        if old is None or new is None:
            units = write_units(item_size(old or new))
        elif any(old[name] != new[name] for name, _ in index.keys):
            units = write_units(item_size(old)) + write_units(item_size(new))
        else:
            units = write_units(max(item_size(old), item_size(new)))
        uses.append(Use(schema.name, index.name, index.local, write=units))
    return uses


def _scan_uses(
    consistent: bool,
    scanned: Sequence[tuple[str, str | None, Sequence[WireItem]]],
    schemas: Mapping[str, TableSchema],
) -> Iterable[Use]:
    """A Query's or Scan's units: one total per table or index, plus who was read per partition."""
    for table, index_name, items in scanned:
        schema = schemas.get(table)
        index = schema.index(index_name) if schema is not None and index_name else None
        by_pk: dict[str, list[int]] = {}
        for item in items:
            pk = canonical(item[schema.hash_key]) if schema is not None and schema.hash_key in item else ""
            by_pk.setdefault(pk, []).append(item_size(item))
        total = total_read_units([s for sizes in by_pk.values() for s in sizes], consistent=consistent)
        yield Use(table, index_name, index is not None and index.local, read=total)
        for pk, sizes in by_pk.items():  # zero-cost markers: who was read, for the partition view
            yield Use(table, "", read=total_read_units(sizes, consistent=consistent), pk=pk)


def _item_uses(
    plan: Plan,
    before: Sequence[WireItem | None],
    after: Sequence[WireItem | None],
    gets: Sequence[WireItem | None],
    schemas: Mapping[str, TableSchema],
) -> Iterable[Use]:
    """The units of reads and writes of single items (and the index writes they cause)."""
    got: WireItem | None
    for (table, _key, strong, transactional), got, (_, pk) in zip(plan.gets, gets, plan.reads, strict=False):
        units = read_units(item_size(got), consistent=strong)
        yield Use(table, read=2 * units if transactional else units, pk=pk)
    for target, old, new in zip(plan.writes, before, after, strict=True):
        if target.check_only:
            yield Use(target.table, read=2 * read_units(item_size(old), consistent=True), pk=target.pk)
            continue
        size = max(item_size(old), item_size(new))
        yield Use(target.table, write=write_units(size, transactional=target.transactional), pk=target.pk)
        schema = schemas.get(target.table)
        if schema is not None:
            yield from index_writes(schema, old, new)


def meter(
    operation: str,
    params: Mapping[str, Any],
    plan: Plan,
    before: Sequence[WireItem | None],
    after: Sequence[WireItem | None],
    gets: Sequence[WireItem | None],
    scanned: Sequence[tuple[str, str | None, Sequence[WireItem]]],
    schemas: Mapping[str, TableSchema],
) -> Metered:
    """DynamoDB's ConsumedCapacity for a successful request, and the units per partition."""
    if operation in WHOLE_TABLE:
        uses = list(_scan_uses(bool(params.get("ConsistentRead")), scanned, schemas))
    else:
        uses = list(_item_uses(plan, before, after, gets, schemas))
    partitions: dict[tuple[str, str], tuple[float, float]] = {}
    for use in uses:
        if use.pk is not None and (use.index is None or use.index == ""):
            r, w = partitions.get((use.table, use.pk), (0.0, 0.0))
            partitions[(use.table, use.pk)] = (r + use.read, w + use.write)
    billed = [u for u in uses if u.index != ""]
    mode = str(params.get("ReturnConsumedCapacity", "NONE"))
    result = Metered(partitions=partitions)
    if mode in ("TOTAL", "INDEXES"):
        entries = report(billed, mode)
        if operation in SINGLE:
            result.report = entries[0] if entries else {"TableName": params.get("TableName"), "CapacityUnits": 0.0}
        else:
            result.report = entries
    return result


def replay(items: Iterable[tuple[str, WireItem | None]], mode: str) -> list[dict[str, Any]]:
    """A repeated ClientRequestToken: DynamoDB reports the read units of reading the items."""
    return report([Use(table, read=read_units(item_size(item), consistent=True)) for table, item in items], mode)


__all__ = ["Metered", "Use", "index_writes", "meter", "replay", "report"]
