"""The store's index: each table's keys in the orders a Query or a Scan reads them, kept sorted.

moto finds a Query's items by sorting every item of the table and a Scan page by walking it
whole, so their cost grows with the table. Here each table keeps, per partition, its items' sort
keys in a sorted list (and one per secondary index, keyed by the index's partition key), plus one
list of every key in scan order. A Query bisects its partition to the range its key condition
names, a Scan page to its ExclusiveStartKey: the work is the range read, or the page.

The orders are moto's own (so answers keep their order and their LastEvaluatedKey): a table's
partition by its sort key; a Scan by (partition key, sort key); an index's partition by the
index's sort key, then the table's keys (a GSI without a sort key: the table's sort key first);
values compare as moto compares them (numbers as Decimal, strings and binaries by value). The
index is plain data (no moto import): it is built from a table's items on first use and follows
every write the store commits (:mod:`.changes`); a control-plane change to a table drops it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sortedcontainers import SortedList

Sortable = Any  # str | Decimal | bytes: a key attribute's value as moto compares it
SortTuple = tuple[Any, ...]
WireItem = Mapping[str, Any]


class _Top:
    """Greater than any value: ``(v, TOP)`` sorts after every tuple that starts with ``v``."""

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return other is self

    def __ge__(self, other: object) -> bool:
        return True


TOP = _Top()


def sortable(value: Mapping[str, Any]) -> Sortable:
    """A key attribute's value (``{"N": "10"}``) as moto orders it: Decimal, str, or bytes."""
    ((kind, raw),) = value.items()
    if kind == "N":
        return Decimal(raw)
    return raw


@dataclass(frozen=True)
class OrderSpec:
    """One way of ordering a table's items: the table itself, or one secondary index."""

    hash_attr: str  # the partition key of the table or index
    query_attrs: tuple[str, ...]  # within one partition (the first is the one a key condition ranges over)
    scan_attrs: tuple[str, ...]  # a Scan's order over every item in it
    required: tuple[str, ...]  # an item is in the order only if it has all of these
    table_keys: tuple[str, ...]  # the table's own key attributes (each tuple ends with their values)


def table_spec(hash_key: str, range_key: str | None) -> OrderSpec:
    keys = (hash_key,) + ((range_key,) if range_key else ())
    return OrderSpec(hash_key, keys[1:], keys, keys, keys)


def index_spec(hash_key: str, range_key: str | None, local: bool, table: OrderSpec) -> OrderSpec:
    """moto's order for an index: its sort key (or, for a GSI without one, the table's sort key, or
    its partition key), then the table's keys."""
    table_hash, table_range = table.table_keys[0], (table.table_keys[1] if len(table.table_keys) > 1 else None)
    if range_key is not None:
        first: str | None = range_key
    elif not local and table_range is not None:
        first = table_range
    else:
        first = table_hash
    query = tuple(a for a in (first, table_hash, table_range) if a is not None)
    scan = tuple(a for a in (hash_key, range_key, table_hash, table_range) if a is not None)
    required = (hash_key,) + ((range_key,) if range_key else ())
    return OrderSpec(hash_key, query, scan, required, table.table_keys)


@dataclass
class Order:
    """The items of one table (or index), sorted within each partition and over the whole table."""

    spec: OrderSpec
    parts: dict[Sortable, SortedList] = field(default_factory=dict)
    scan: SortedList = field(default_factory=SortedList)
    entries: dict[SortTuple, tuple[Sortable, SortTuple, SortTuple]] = field(default_factory=dict)

    def _tuples(self, item: WireItem) -> tuple[SortTuple, Sortable, SortTuple, SortTuple] | None:
        spec = self.spec
        if any(name not in item for name in spec.required):
            return None
        key = tuple(sortable(item[name]) for name in spec.table_keys)
        query = tuple(sortable(item[name]) for name in spec.query_attrs) + key
        scan = tuple(sortable(item[name]) for name in spec.scan_attrs) + key
        return key, sortable(item[spec.hash_attr]), query, scan

    def add(self, item: WireItem) -> None:
        found = self._tuples(item)
        if found is None:
            return
        key, hash_value, query, scan = found
        part = self.parts.get(hash_value)
        if part is None:
            part = self.parts[hash_value] = SortedList()
        part.add(query)
        self.scan.add(scan)
        self.entries[key] = (hash_value, query, scan)

    def remove(self, key: SortTuple) -> None:
        found = self.entries.pop(key, None)
        if found is None:
            return
        hash_value, query, scan = found
        part = self.parts[hash_value]
        part.remove(query)
        if not part:
            del self.parts[hash_value]
        self.scan.remove(scan)

    def key_width(self) -> int:
        return len(self.spec.table_keys)

    def key_of(self, item: WireItem) -> SortTuple:
        return tuple(sortable(item[name]) for name in self.spec.table_keys)

    def change(self, before: WireItem | None, after: WireItem | None) -> None:
        """An item went from ``before`` to ``after`` (None: absent)."""
        if before is not None:
            self.remove(self.key_of(before))
        if after is not None:
            self.add(after)


def _bounds(part: SortedList, op: str | None, values: list[Sortable]) -> tuple[int, int] | None:
    """[lo, hi) of the entries whose first element meets the key condition; None: not a range (use moto)."""
    if op is None:
        return 0, len(part)
    if op in ("=", "EQ"):
        return part.bisect_left((values[0],)), part.bisect_right((values[0], TOP))
    if op in ("<", "LT"):
        return 0, part.bisect_left((values[0],))
    if op in ("<=", "LE"):
        return 0, part.bisect_right((values[0], TOP))
    if op in (">", "GT"):
        return part.bisect_right((values[0], TOP)), len(part)
    if op in (">=", "GE"):
        return part.bisect_left((values[0],)), len(part)
    if op == "BETWEEN":
        low, high = part.bisect_left((values[0],)), part.bisect_right((values[1], TOP))
        return low, max(low, high)
    if op == "BEGINS_WITH":
        prefix = values[0]
        if not isinstance(prefix, str | bytes):
            return None
        low = part.bisect_left((prefix,))
        high = low
        while high < len(part) and isinstance(part[high][0], type(prefix)) and part[high][0].startswith(prefix):
            high += 1
        return low, high
    return None


def query_positions(
    order: Order,
    hash_value: Sortable,
    op: str | None,
    values: list[Sortable],
    forward: bool,
    start: SortTuple | None,
    start_hash: Sortable | None,
) -> tuple[SortedList, range] | None:
    """The positions of a Query's candidates in one partition, in read order, after ``start`` (the
    ExclusiveStartKey's query tuple; ``start_hash`` its partition key). None: not served here."""
    part = order.parts.get(hash_value)
    if part is None:
        return SortedList(), range(0)
    bounds = _bounds(part, op, values)
    if bounds is None:
        return None
    low, high = bounds
    if start is not None:
        if start_hash != hash_value:  # moto compares the partition key first
            before = hash_value < start_hash if forward else hash_value > start_hash
            if before:
                return part, range(0)
        elif forward:
            low = max(low, part.bisect_right(start))
        else:
            high = min(high, part.bisect_left(start))
    if high <= low:
        return part, range(0)
    return part, (range(low, high) if forward else range(high - 1, low - 1, -1))


def scan_position(order: Order, start: SortTuple | None) -> int:
    """Where a Scan page starts in the order's scan list: after ``start`` (its ExclusiveStartKey's tuple)."""
    return 0 if start is None else order.scan.bisect_right(start)


def build(spec: OrderSpec, items: Iterable[WireItem]) -> Order:
    order = Order(spec)
    for item in items:
        order.add(item)
    return order


__all__ = [
    "TOP",
    "Order",
    "OrderSpec",
    "SortTuple",
    "Sortable",
    "build",
    "index_spec",
    "query_positions",
    "scan_position",
    "sortable",
    "table_spec",
]
