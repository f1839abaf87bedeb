"""A view of the store as of before some changes: what an eventually consistent read may see.

:func:`as_before` puts each changed item's earlier image in moto's table for the length of a
``with`` block (the store's Query/Scan index follows), then puts every item back as it was. It is
not a write: nothing goes through :meth:`~.moto_store.MotoStore.commit`, so the durable log
(``--data``) and the listeners never hear of it. Runs under the engine's lock; only reads run inside
(:mod:`labkit.endpoint.weak`, ``stale-read``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..expressions.evaluate import as_bytes
from .changes import Change, Commit, WireItem
from .moto_adapter import key_values, new_item, wire

if TYPE_CHECKING:
    from .moto_store import MotoStore


@dataclass(frozen=True)
class _Saved:
    """One item the view changed, and what to put back."""

    table: Any
    hash_value: Any
    range_value: Any
    key: dict[str, Any]
    original: Any  # moto's Item, or None
    had: bool  # its partition was in moto's table before the view


def _stored(key: dict[str, Any]) -> dict[str, Any]:
    """A plain key as moto keeps it (binary values as bytes)."""
    return {k: {"B": as_bytes(v["B"])} if "B" in v else v for k, v in key.items()}


@contextlib.contextmanager
def as_before(store: MotoStore, account: str, region: str, undo: Sequence[Change]) -> Iterator[None]:
    """Inside the block, reads see each item of ``undo`` (changes, newest first: an item's oldest
    change decides its image) as it was before; after it, every item is as it was."""
    real = store.real(account, region)
    saved: dict[tuple[str, str], _Saved] = {}
    try:
        for change in undo:
            table = real.tables.get(change.table)
            if table is None:
                continue
            hash_value, range_value = key_values(table, _stored(change.key))
            name = (change.table, json.dumps(change.key, sort_keys=True, default=repr))
            if name not in saved:
                had = range_value is None or hash_value in table.items
                original = table.get_item(hash_value, range_value)
                saved[name] = _Saved(table, hash_value, range_value, dict(change.key), original, had)
            _swap(store, account, region, saved[name], change.before)
        yield
    finally:
        for kept in saved.values():
            _swap(store, account, region, kept, None, kept.original)
            if not kept.had and not kept.table.items.get(kept.hash_value):
                kept.table.items.pop(kept.hash_value, None)


def _swap(
    store: MotoStore, account: str, region: str, at: _Saved, image: WireItem | None, moto_item: Any = None
) -> None:
    """Put ``image`` (or ``moto_item``; neither: nothing) at one key, the index told; no commit."""
    table, hash_value, range_value = at.table, at.hash_value, at.range_value
    current = table.get_item(hash_value, range_value)
    if moto_item is None and image is not None:
        moto_item = new_item(table, image)
    if range_value is not None:
        if moto_item is None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items[hash_value][range_value] = moto_item
    elif moto_item is None:
        table.items.pop(hash_value, None)
    else:
        table.items[hash_value] = moto_item
    viewed = Change(table.name, at.key, wire(current), wire(moto_item))
    store.orders.follow(Commit(account, region, "", (viewed,)))


__all__ = ["as_before"]
