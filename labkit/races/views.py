"""The views of a weak answer the race lab explores at a read, and the engine's form of each as it goes out.

A stale or torn read is named by the writes of the run it does not see (:mod:`labkit.engine_plugins.faults.views`:
``B3: stale-read (index misses A1)``). :func:`views_at` lists the views worth a scenario at one read
of a run without faults — the reduction (decision 205): not every subset of what the history keeps,
only what can change this read's answer:

* a table, LSI or partition read (GetItem, Query, Scan, a PartiQL SELECT) lags as a prefix of its
  writes: ``behind N`` for N = 2 .. k, k the run's writes before it that touch what it reads (plain
  ``stale-read`` is the first view that differs: ``behind 1`` when that one does);
* a BatchGetItem reads each key on its own, a global secondary index lags per base item: for each
  item the run wrote before the read (a key the batch reads eventually consistently; any item of
  the index's table), none or one of its writes to miss from (a prefix of that item's writes, never
  an older write without the newer ones), every combination but "none" — at most :data:`MOST_VIEWS`;
* a torn read (BatchGetItem, Query, Scan) beside another actor's TransactWriteItems — the actor's
  latest call, so it may still be in flight — misses a non-empty proper subset of the items it
  wrote that the read reads and no later write has overwritten.

:class:`Resolver` turns a view into the engine's ``X-Labkit-Weak-Answer`` form as the read goes out
(the items' keys, and for each how many of its latest writes it misses), or None when this order has
not made the writes the view names (the fault is then not given: the call goes as it is).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ..engine_plugins.faults.kinds import StaleRead, TornRead, WeakAnswerFault
from ..engine_plugins.faults.views import BEHIND, INDEX_MISSES, MISSES, View, Write
from ..shared.catalogue import Op, WeakAnswer, WeakForm, item_keys, key_name
from ..shared.intercept import CallRecord
from .identity import Access, KeySchemas, accesses, item_access

#: The most views offered at one read (a GSI read after many writes to many items): the first, fewest items first.
MOST_VIEWS = 64
#: The pseudo-table of torn reads: a torn read's call reads it whole, the call that follows an actor's
#: TransactWriteItems writes the actor's own item in it, so DPOR explores whether that transaction may still be in
#: flight at the read (the two need not touch a common item); two reads, or two actors' next calls, never meet here.
TORN = "\0torn-read"
TORN_READ_ACCESS = Access(TORN, None, None, False)


def torn_write(actor: str) -> Access:
    """What the call after ``actor``'s TransactWriteItems touches besides its own items: it ends that transaction's
    time in flight."""
    return Access(TORN, ("S", actor), None, True)


_SEVERAL = (Op.TRANSACT_WRITE_ITEMS, Op.BATCH_WRITE_ITEM)


@dataclass(frozen=True)
class Written:
    """An item one call wrote: its name in a view, the item, its key as the engine names it."""

    write: Write
    item: Access
    key: str


def _same(a: Access, b: Access) -> bool:
    return (a.table, a.hash, a.range) == (b.table, b.hash, b.range)


def _ok(record: CallRecord) -> bool:
    return record.outcome == "ok"


class Resolver:
    """Views named by the run's writes, read against the tables' key schemas (DescribeTable, once each)."""

    def __init__(self, schemas: KeySchemas) -> None:
        self.schemas = schemas

    # ------------------------------------------------------------ what calls wrote and read

    def written(self, record: CallRecord) -> list[Written]:
        """The items ``record`` wrote (an action index when its kind writes several), keyed as the engine keys them."""
        out: list[Written] = []
        several = record.operation in _SEVERAL
        schema_of = functools.partial(self.schemas, record.region)
        for i, (table, attrs, write) in enumerate(item_keys(record.operation, record.params)):
            names = schema_of(table) if write else None
            if names is None:
                continue
            item = item_access(table, attrs, True, schema_of)
            if item.hash is None or (names[1] is not None and item.range is None):
                continue
            key = {names[0]: {item.hash[0]: item.hash[1]}}
            if names[1] is not None and item.range is not None:
                key[names[1]] = {item.range[0]: item.range[1]}
            n = record.seq + 1
            out.append(Written(Write(record.actor, n, i if several else None), item, key_name(key)))
        return out

    def _accesses(self, record: CallRecord) -> frozenset[Access]:
        return accesses(record.operation, record.params, functools.partial(self.schemas, record.region))

    def _eventual_keys(self, read: CallRecord) -> list[Access]:
        """The items a GetItem or BatchGetItem reads without ConsistentRead (each key on its own)."""
        tables = read.params.get("RequestItems") or {}
        schema_of = functools.partial(self.schemas, read.region)
        out = []
        for table, attrs, _ in item_keys(read.operation, read.params):
            entry = tables.get(table) if read.operation == Op.BATCH_GET_ITEM else read.params
            if isinstance(entry, dict) and entry.get("ConsistentRead") is True:
                continue
            item = item_access(table, attrs, False, schema_of)
            if item.hash is not None:
                out.append(item)
        return out

    def _index_table(self, read: CallRecord) -> str | None:
        """The table of a Query or Scan on a global secondary index (its entries lag per base item), else None."""
        index, table = read.params.get("IndexName"), read.params.get("TableName")
        if read.operation not in (Op.QUERY, Op.SCAN) or not isinstance(index, str) or not isinstance(table, str):
            return None
        return table if self.schemas.global_index(read.region, table, index) else None

    def _writes_since(self, item: Access, before: Sequence[CallRecord], start: int) -> int | None:
        """How many of ``before[start:]`` wrote ``item`` (None: a write there touched its table whole: unknown)."""
        n = 0
        for record in before[start:]:
            if not _ok(record):
                continue
            for access in self._accesses(record):
                if access.write and access.table == item.table:
                    if access.hash is None:
                        return None
                    if _same(access, item):
                        n += 1
                        break
        return n

    # ------------------------------------------------------------ the views worth a scenario

    def views_at(self, kind: str, read: CallRecord, before: Sequence[CallRecord]) -> list[View]:
        """The views of ``kind`` (stale-read, torn-read) that can change ``read``'s answer after ``before``."""
        if not WeakAnswerFault.gives(_FAULTS[kind], read.operation, read.params):
            return []
        if kind == WeakAnswer.TORN_READ:
            return self._torn_views(read, before)
        table = self._index_table(read)
        if read.operation == Op.BATCH_GET_ITEM or table is not None:
            keys = self._eventual_keys(read) if table is None else None
            return self._item_views(INDEX_MISSES if table is not None else MISSES, keys, table, before)
        reads = self._accesses(read)
        k = sum(
            1 for r in before if _ok(r) and any(a.write and any(a.meets(x) for x in reads) for a in self._accesses(r))
        )
        return [View(BEHIND, n) for n in range(2, min(k, MOST_VIEWS + 1) + 1)]

    def _item_views(
        self, kind: str, keys: list[Access] | None, table: str | None, before: Sequence[CallRecord]
    ) -> list[View]:
        per_item: dict[tuple[object, ...], list[Write]] = {}
        for record in before:
            if not _ok(record):
                continue
            for w in self.written(record):
                wanted = w.item.table == table if keys is None else any(_same(w.item, k) for k in keys)
                if wanted:
                    per_item.setdefault((w.item.table, w.item.hash, w.item.range), []).append(w.write)
        choices = [[None, *writes] for writes in per_item.values()]
        views = [
            View(kind, writes=tuple(sorted(w for w in pick if w is not None)))
            for pick in itertools.product(*choices)
            if any(w is not None for w in pick)
        ]
        views.sort(key=lambda v: (len(v.writes), v.writes))
        return views[:MOST_VIEWS]

    def _torn_views(self, read: CallRecord, before: Sequence[CallRecord]) -> list[View]:
        reads = self._accesses(read)
        views: list[View] = []
        for at, record in enumerate(before):
            if not self._beside(record, read, before, at):
                continue
            mine = self.written(record)
            seen = [
                w
                for w in mine
                if any(x.meets(w.item) for x in reads) and self._writes_since(w.item, before, at + 1) == 0
            ]
            for size in range(1, min(len(seen), len(mine) - 1) + 1):
                views += [
                    View(MISSES, writes=tuple(w.write for w in subset)) for subset in itertools.combinations(seen, size)
                ]
        return views[:MOST_VIEWS]

    @staticmethod
    def _beside(record: CallRecord, read: CallRecord, before: Sequence[CallRecord], at: int) -> bool:
        """Is ``record`` another actor's committed TransactWriteItems that may still be in flight at ``read``
        (its actor has made no call since)?"""
        if record.operation != Op.TRANSACT_WRITE_ITEMS or not _ok(record) or record.actor == read.actor:
            return False
        return not any(r.actor == record.actor for r in before[at + 1 :])

    # ------------------------------------------------------------ a view, as the read goes out

    def __call__(self, fault: WeakAnswerFault, read: CallRecord, before: Sequence[CallRecord]) -> str | None:
        """The engine's form of ``fault``'s view for ``read`` after the run's calls ``before``; None: not in this
        order (a write it names was not made, failed, or wrote nothing the read reads)."""
        view = fault.view
        if view is None:
            return str(fault.label)
        if view.kind == BEHIND:
            return WeakForm(WeakAnswer.STALE_READ, behind=view.behind).text()
        found: list[tuple[Written, int]] = []
        for write in view.writes:
            at = next((i for i, r in enumerate(before) if r.actor == write.actor and r.seq == write.n - 1), None)
            if at is None or not _ok(before[at]):
                return None
            items = [w for w in self.written(before[at]) if w.write == write]
            if len(items) != 1:
                return None
            found.append((items[0], at))
        if isinstance(fault, TornRead):
            return self._torn_form(read, before, found)
        table = self._index_table(read)
        keys = self._eventual_keys(read) if view.kind == MISSES else []
        misses: list[tuple[str, int]] = []
        for w, at in found:
            if view.kind == INDEX_MISSES and w.item.table != table:
                return None
            if view.kind == MISSES and not any(_same(w.item, k) for k in keys):
                return None
            steps = self._writes_since(w.item, before, at)
            if not steps or any(key == w.key for key, _ in misses):
                return None
            misses.append((w.key, steps))
        return WeakForm(WeakAnswer.STALE_READ, misses=tuple(misses), index=view.kind == INDEX_MISSES).text()

    def _torn_form(
        self, read: CallRecord, before: Sequence[CallRecord], found: list[tuple[Written, int]]
    ) -> str | None:
        ats = {at for _, at in found}
        if len(ats) != 1:
            return None
        (at,) = ats
        if not self._beside(before[at], read, before, at) or len(found) >= len(self.written(before[at])):
            return None
        if any(self._writes_since(w.item, before, at + 1) != 0 for w, _ in found):
            return None
        return WeakForm(WeakAnswer.TORN_READ, misses=tuple((w.key, 1) for w, _ in found)).text()


_FAULTS: dict[str, WeakAnswerFault] = {WeakAnswer.STALE_READ: StaleRead(), WeakAnswer.TORN_READ: TornRead()}

__all__ = ["MOST_VIEWS", "TORN", "TORN_READ_ACCESS", "Resolver", "Written", "torn_write"]
