"""The image history: the previous committed images of recently written items, bounded.

An eventually consistent read may be answered as of before the latest write(s) to what it reads
(``X-Labkit-Weak-Answer: stale-read``, :mod:`labkit.endpoint.weak`). :class:`ImageHistory` is a
store listener (:attr:`labkit.endpoint.store.moto_store.MotoStore.listeners`): every commit's
changes are kept, newest last, at most :data:`IMAGES_PER_ITEM` per item and :data:`CHANGES_KEPT`
changes or :data:`BYTES_KEPT` bytes of images in all (the oldest go first). It keeps what it is
told and never writes to the store; :meth:`ImageHistory.rollbacks` hands back, newest first, the
changes to undo for a view "as of before", :meth:`ImageHistory.latest` one item's own changes,
:meth:`ImageHistory.transactions` the recent TransactWriteItems commits (``torn-read``).

A view is exact or not given: an item that lost its oldest change to the per-item bound keeps
that change as its *floor*; a view of a scope that reads the item (its partition, its table; any
index partition, which it may have passed through in a change it lost) reaching back to it would
show the item at a state it never had then, so :meth:`~ImageHistory.rollbacks` stops before it. The global bounds
drop the oldest commits first, so they never leave such a hole. Plain data, no moto import.
"""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...shared.catalogue import Op
from .changes import Change, Commit

#: Changes kept per item: a stale read can go back this many writes of one item.
IMAGES_PER_ITEM = 4
#: Changes kept in all, and the bytes their images may take (estimated as DynamoDB sizes items).
CHANGES_KEPT = 10_000
BYTES_KEPT = 8 * 1024 * 1024
#: At most this many commits are undone, newest first, looking for an answer that differs.
STEPS = 8
#: The commit's operation whose changes :meth:`ImageHistory.transactions` hands back.
TRANSACTION: str = Op.TRANSACT_WRITE_ITEMS

ItemId = tuple[str, str, str, str]  # account, region, table, the key as sorted JSON


@dataclass(frozen=True)
class Scope:
    """What a read reads: the items it names (``items``: table and :func:`key_text`), or else the
    changes of ``table`` that ``test`` says it reads (its partition, its index partition, all)."""

    items: frozenset[tuple[str, str]] | None = None
    table: str = ""
    test: Callable[[Change], bool] = lambda change: True
    #: ``test`` reads only a change's key (an item's changes are all in the scope or all out); False
    #: (an index partition, read from the images): an item may have passed through it in any change
    keyed: bool = True


@dataclass(frozen=True)
class Kept:
    """One change kept: the commit it belongs to (numbered in order) and its images."""

    commit: int
    item: ItemId
    change: Change
    size: int
    transactional: bool = False
    of: int = 1  # how many changes its commit made


def _value_size(value: Any) -> int:
    if isinstance(value, Mapping):
        return sum(len(k) + _value_size(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return sum(_value_size(v) for v in value)
    if isinstance(value, str | bytes | bytearray):
        return len(value)
    return 8


def image_size(image: Mapping[str, Any] | None) -> int:
    """About the bytes an image holds (attribute names and values, as DynamoDB sizes an item)."""
    return 0 if image is None else _value_size(image)


def key_text(key: Mapping[str, Any]) -> str:
    """A key as one hashable text (binary values as their repr: a key names one item)."""
    return json.dumps(key, sort_keys=True, default=repr)


class ImageHistory:
    """The previous images of recently written items (see the module docstring). Runs under the engine's lock."""

    def __init__(self, per_item: int = IMAGES_PER_ITEM, changes: int = CHANGES_KEPT, size: int = BYTES_KEPT) -> None:
        self.per_item, self.changes, self.size = per_item, changes, size
        self._kept: OrderedDict[int, Kept] = OrderedDict()  # by a running number, oldest first
        self._items: dict[ItemId, deque[int]] = {}
        self._tables: dict[tuple[str, str, str], OrderedDict[int, None]] = {}
        self._bytes = 0
        self._next = 0
        self._commits = 0
        # the newest change an item lost to the per-item bound (its floor), and the items of a table
        # that have one: a view of a scope that change is in stops above its commit
        self._floor_of: dict[ItemId, Kept] = {}
        self._floored: dict[tuple[str, str, str], set[ItemId]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> int:
        """The estimated bytes of every image kept."""
        return self._bytes

    def __call__(self, commit: Commit) -> None:
        """A store listener: keep this commit's changes, dropping the oldest past the bounds."""
        if not commit.changes:
            return
        self._commits += 1
        transactional = commit.operation == TRANSACTION
        for change in commit.changes:
            item = (commit.account, commit.region, change.table, key_text(change.key))
            size = image_size(change.before) + image_size(change.after)
            kept = Kept(self._commits, item, change, size, transactional, len(commit.changes))
            n, self._next = self._next, self._next + 1
            self._kept[n] = kept
            self._tables.setdefault(item[:3], OrderedDict())[n] = None
            self._bytes += kept.size
            mine = self._items.setdefault(item, deque())
            mine.append(n)
            if len(mine) > self.per_item:
                self._floor_of[item] = self._kept[mine[0]]
                self._floored.setdefault(item[:3], set()).add(item)
                self._drop(mine.popleft())
        while self._kept and (len(self._kept) > self.changes or self._bytes > self.size):
            n, kept = next(iter(self._kept.items()))
            mine = self._items[kept.item]
            mine.popleft()  # the oldest kept change is its item's oldest too
            if not mine:
                del self._items[kept.item]
                self._unfloor(kept.item)
            self._drop(n)

    def _drop(self, n: int) -> None:
        kept = self._kept.pop(n)
        self._bytes -= kept.size
        table = self._tables[kept.item[:3]]
        del table[n]
        if not table:
            del self._tables[kept.item[:3]]

    def _unfloor(self, item: ItemId) -> None:
        """An item left the history: its floor goes (every change it lost is older than any kept)."""
        if self._floor_of.pop(item, None) is not None:
            floored = self._floored[item[:3]]
            floored.discard(item)
            if not floored:
                del self._floored[item[:3]]

    def forget(self, account: str, region: str) -> None:
        """Drop every change kept in an account and region (a table there was made, changed or deleted)."""
        for n, kept in list(self._kept.items()):
            if kept.item[:2] == (account, region):
                self._drop(n)
        for item in [i for i in self._items if i[:2] == (account, region)]:
            del self._items[item]
            self._unfloor(item)

    def clear(self) -> int:
        """Forget every change kept (every account and region): as if every write so far had propagated."""
        dropped = len(self._kept)
        self._kept.clear()
        self._items.clear()
        self._tables.clear()
        self._floor_of.clear()
        self._floored.clear()
        self._bytes = 0
        return dropped

    def floors(self) -> int:
        """How many items carry a floor (bounded by the items kept: a test reads it)."""
        return len(self._floor_of)

    def _floor(self, account: str, region: str, scope: Scope) -> int:
        """The newest commit a view of ``scope`` may not reach back to (0: none): that of the newest
        change an item lost, if ``scope`` reads the item (a keyed scope reads all its changes or
        none; an index partition may have seen it in any change it lost, so any counts)."""
        if scope.items is not None:
            items: Iterable[ItemId] = ((account, region, table, key) for table, key in scope.items)
        else:
            items = self._floored.get((account, region, scope.table), ())
        lost = (self._floor_of.get(item) for item in items)
        return max((k.commit for k in lost if k is not None and (not scope.keyed or scope.test(k.change))), default=0)

    def latest(self, account: str, region: str, table: str, key: str, steps: int) -> list[Change] | None:
        """One item's ``steps`` latest changes, newest first, to undo for a view of it as of before them;
        None when fewer are kept."""
        item = (account, region, table, key)
        mine = self._items.get(item, ())
        if len(mine) < steps:
            return None
        return [self._kept[n].change for n in reversed(mine)][:steps]  # what was dropped is older: exact

    def transactions(
        self, account: str, region: str, scope: Scope, steps: int = STEPS
    ) -> Iterator[tuple[list[Change], int]]:
        """The recent TransactWriteItems commits that wrote what ``scope`` reads, newest first (at
        most ``steps``): each as its changes in ``scope`` that are still their item's latest (a
        later write to an item is seen with it), in request order, and how many changes it made in all."""
        for _, kept in self._commits_in(account, region, scope):
            if steps <= 0:
                return
            steps -= 1
            if not kept[0].transactional:
                continue
            latest = [k for k in reversed(kept) if self._kept[self._items[k.item][-1]] is k]
            if latest:
                yield [k.change for k in latest], kept[0].of

    def _commits_in(self, account: str, region: str, scope: Scope) -> Iterator[tuple[int, list[Kept]]]:
        """The kept changes in ``scope``, newest first, grouped by commit."""
        if scope.items is not None:
            found = (self._items.get((account, region, table, key), ()) for table, key in scope.items)
            numbers: Iterable[int] = sorted((n for mine in found for n in mine), reverse=True)
        else:
            numbers = reversed(self._tables.get((account, region, scope.table), OrderedDict()))
        group: list[Kept] = []
        for n in numbers:
            kept = self._kept[n]
            if not scope.test(kept.change):
                continue
            if group and kept.commit != group[0].commit:
                yield group[0].commit, group
                group = []
            group.append(kept)
        if group:
            yield group[0].commit, group

    def rollbacks(self, account: str, region: str, scope: Scope, steps: int = STEPS) -> Iterator[list[Change]]:
        """The changes to undo, newest first, for a view as of before the latest commit in ``scope``;
        then before the two latest; ... (at most ``steps`` commits, and never back to a floor). Only
        changes in ``scope`` are undone."""
        floor = self._floor(account, region, scope)
        undo: list[Change] = []
        for commit, kept in self._commits_in(account, region, scope):
            if steps <= 0 or commit <= floor:
                return
            steps -= 1
            undo.extend(k.change for k in kept)
            yield list(undo)


__all__ = [
    "BYTES_KEPT",
    "CHANGES_KEPT",
    "IMAGES_PER_ITEM",
    "STEPS",
    "TRANSACTION",
    "ImageHistory",
    "Kept",
    "Scope",
    "image_size",
]
