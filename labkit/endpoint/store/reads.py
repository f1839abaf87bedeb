"""Query and Scan served from the store's index (:mod:`.partitions`), answering as moto answers.

:class:`Orders` keeps each table's orders (the table's and one per secondary index), built from
the table's items the first time a Query or Scan reads it and kept up to date by every commit
(:meth:`Orders.follow`); a table replaced (deleted and made again, restored) or re-indexed
(UpdateTable) is rebuilt on its next read. :func:`query` and :func:`scan` take the arguments
moto's ``DynamoHandler`` passes to ``DynamoDBBackend.query`` / ``scan`` and return what those
return — moto's items (copied, projected for an index), the count read, the LastEvaluatedKey —
reading only the range a key condition names, or one page. Requests outside what the index
serves (a legacy filter left for moto, a multi-attribute index key) return None and moto answers.

One difference from moto, on DynamoDB's side: a Query whose page fills 1 MB exactly where its key
range ends gets no LastEvaluatedKey (moto's could carry one, from the size of an item outside the
range it had to walk past). Works on moto's objects without importing moto: ``key_values``
(from :mod:`.moto_adapter`) turns a plain key into moto's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import TableSchema
from .changes import Commit
from .partitions import (
    Order,
    OrderSpec,
    SortTuple,
    build,
    index_spec,
    query_positions,
    scan_position,
    sortable,
    table_spec,
)

WireItem = dict[str, Any]
#: moto's page size limit (DynamoDB's 1 MB): a page stops before the item that would pass it.
RESULT_SIZE_LIMIT = 1_000_000


@dataclass
class Built:
    """One table's orders, and what they were built for."""

    table: Any  # moto's Table object
    shape: tuple[Any, ...]
    base: Order
    indexes: dict[str, Order]
    types: dict[str, str]  # key attribute -> "S" | "N" | "B"


def _shape(table: Any) -> tuple[Any, ...]:
    indexes = list(table.global_indexes or []) + list(table.indexes or [])
    return tuple((i.name, tuple((k["AttributeName"], k["KeyType"]) for k in i.schema)) for i in indexes)


def _specs(schema: TableSchema) -> tuple[OrderSpec, dict[str, OrderSpec]] | None:
    base = table_spec(schema.hash_key, schema.keys[1][0] if len(schema.keys) > 1 else None)
    indexes = {}
    for index in schema.indexes:
        if len(index.keys) > 2:
            return None  # a multi-attribute key: moto serves it
        hash_key = index.keys[0][0]
        range_key = index.keys[1][0] if len(index.keys) > 1 else None
        indexes[index.name] = index_spec(hash_key, range_key, index.local, base)
    return base, indexes


class Orders:
    """Every table's orders, for one store (keyed by account, region and table name)."""

    def __init__(self, wire: Callable[[Any], WireItem | None]) -> None:
        self._wire = wire
        self._built: dict[tuple[str, str, str], Built] = {}

    def of(self, who: tuple[str, str], table: Any, schema: TableSchema) -> Built | None:
        """The table's orders, built (or rebuilt) from its items if they are not up to date; None if
        the table has a key the index does not serve."""
        name = (who[0], who[1], table.name)
        built = self._built.get(name)
        shape = _shape(table)
        if built is not None and built.table is table and built.shape == shape:
            return built
        specs = _specs(schema)
        if specs is None:
            return None
        base_spec, index_specs = specs
        items = [w for w in map(self._wire, _all_items(table)) if w is not None]
        types = dict(schema.keys) | {k: t for index in schema.indexes for k, t in index.keys}
        built = Built(
            table,
            shape,
            build(base_spec, items),
            {n: build(spec, items) for n, spec in index_specs.items()},
            types,
        )
        self._built[name] = built
        return built

    def follow(self, commit: Commit) -> None:
        """Keep the orders of the tables a commit wrote up to date (a table not built yet is built later)."""
        for change in commit.changes:
            built = self._built.get((commit.account, commit.region, change.table))
            if built is None:
                continue
            built.base.change(change.before, change.after)
            for order in built.indexes.values():
                order.change(change.before, change.after)

    def forget(self, account: str, region: str, table: str) -> None:
        self._built.pop((account, region, table), None)


def _all_items(table: Any) -> Iterable[Any]:
    for entry in table.items.values():
        if isinstance(entry, dict):
            yield from entry.values()
        else:
            yield entry


def _key_dict(built: Built, spec: OrderSpec, key: SortTuple) -> WireItem:
    out: WireItem = {}
    for name, value in zip(spec.table_keys, key, strict=True):
        kind = built.types[name]
        out[name] = {kind: str(value) if kind == "N" else value}
    return out


def _lookup(built: Built, spec: OrderSpec, key: SortTuple, key_values: Callable[[Any, WireItem], Any]) -> Any:
    hash_value, range_value = key_values(built.table, _key_dict(built, spec, key))
    return built.table.get_item(hash_value, range_value)


def _order(
    orders: Orders, who: tuple[str, str], table: Any, schema: TableSchema, index_name: str | None
) -> tuple[Built, Order] | None:
    """The built orders and the one a read goes through (the table's, or its index's); None: moto's to answer."""
    built = orders.of(who, table, schema)
    if built is None:
        return None
    order = built.base if index_name is None else built.indexes.get(index_name)
    return None if order is None else (built, order)


def _page(
    table: Any, index_name: str | None, items: Iterable[tuple[int, Any]], limit: int | None
) -> tuple[list[Any], Any, int]:
    """(The page, its LastEvaluatedKey when the limit or the 1 MB page cut it short, else None; the last position
    in it): the items taken in order as moto pages them."""
    results: list[Any] = []
    size, last = 0, -1
    for position, item in items:
        item_size = item.size()
        if limit is not None and len(results) == limit or size + item_size > RESULT_SIZE_LIMIT:
            return results, table._get_last_evaluated_key(results[-1], index_name), last
        results.append(item)
        size += item_size
        last = position
    return results, None, last


def _start(spec: OrderSpec, attrs: tuple[str, ...], start: Mapping[str, Any] | None) -> SortTuple | None:
    if start is None:
        return None
    return tuple(sortable(start[a]) for a in attrs) + tuple(sortable(start[a]) for a in spec.table_keys)


def query(
    orders: Orders,
    who: tuple[str, str],
    table: Any,
    schema: TableSchema,
    key_values: Callable[[Any, WireItem], Any],
    *,
    hash_key: Mapping[str, Any] | None,
    comparison: str | None,
    values: Sequence[Mapping[str, Any]],
    limit: int | None,
    start: Mapping[str, Any] | None,
    forward: bool,
    index_name: str | None,
    range_conditions: list[tuple[str, str, list[Any]]],
) -> tuple[list[Any], int, Any] | None:
    """A Query's (items, scanned count, LastEvaluatedKey) read from its partition's range; None: moto's to answer."""
    found_order = _order(orders, who, table, schema, index_name)
    if found_order is None or hash_key is None:
        return None
    built, order = found_order
    spec = order.spec
    if comparison is not None and (not spec.query_attrs or range_conditions[-1][0] != spec.query_attrs[0]):
        return None  # the condition is on another attribute than the order's first (moto says what it says)
    if index_name is not None and comparison is not None and len(order.spec.required) < 2:
        return None  # a range condition on an index without a sort key: moto refuses it
    try:
        found = query_positions(
            order,
            sortable(hash_key),
            comparison,
            [sortable(v) for v in values],
            forward,
            _start(spec, spec.query_attrs, start),
            sortable(start[spec.hash_attr]) if start is not None else None,
        )
    except (KeyError, TypeError):  # a start key or value the index cannot place: moto answers
        return None
    if found is None:
        return None
    part, positions = found
    width = len(spec.table_keys)
    items = ((p, _lookup(built, spec, part[p][-width:], key_values)) for p in positions)
    results, last_key, last = _page(table, index_name, items, limit)
    # moto reads on past the range: a full page with anything after it in the partition has a next page
    full = last_key is None and results and limit is not None and len(results) == limit
    if full and (last + 1 < len(part) if forward else last > 0):
        last_key = table._get_last_evaluated_key(results[-1], index_name)
    return _copied(table, index_name, results), len(results), last_key


def scan(
    orders: Orders,
    who: tuple[str, str],
    table: Any,
    schema: TableSchema,
    key_values: Callable[[Any, WireItem], Any],
    *,
    limit: int | None,
    start: Mapping[str, Any] | None,
    index_name: str | None,
    segments: tuple[Any, Any],
) -> tuple[list[Any], int, Any] | None:
    """A Scan page's (items, scanned count, LastEvaluatedKey), read from its ExclusiveStartKey on; None: moto's."""
    found_order = _order(orders, who, table, schema, index_name)
    if found_order is None:
        return None
    built, order = found_order
    spec = order.spec
    try:
        position = scan_position(order, _start(spec, spec.scan_attrs, start))
    except (KeyError, TypeError):
        return None
    width = len(spec.table_keys)
    items = (_lookup(built, spec, entry[-width:], key_values) for entry in order.scan.islice(position))
    results, last_key, _ = _page(table, index_name, enumerate(i for i in items if i.is_within_segment(segments)), limit)
    return _copied(table, index_name, results), len(results), last_key


def _copied(table: Any, index_name: str | None, items: list[Any]) -> list[Any]:
    """moto's answer: copies of the items, projected as the index projects them."""
    copies = copy.deepcopy(items)
    if index_name is None:
        return copies
    index = table.get_index(index_name)
    return [index.project(item) for item in copies]


__all__ = ["RESULT_SIZE_LIMIT", "Built", "Orders", "query", "scan"]
