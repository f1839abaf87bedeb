"""What a write did, as plain data: the one record every write of the store produces.

:class:`Commit` is what one successful request changed — every item it wrote, with its image
before and after (``None``: absent), in request order — or, for a control-plane request
(CreateTable, UpdateTable, UpdateTimeToLive, TagResource, ...), the tables it changed.
:meth:`labkit.endpoint.store.moto_store.MotoStore.commit` is the single place every write goes
through once it is applied: the durable log (``--data``) writes it first, then the store's
partition index follows it, then each :class:`Listener` in order. A listener runs under the
engine's lock and must not write to the store; what it keeps (an image history, a stream) is
its own. No moto import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WireItem = dict[str, Any]


@dataclass(frozen=True)
class Change:
    """One item a request wrote: its key, and its images before and after (None: absent)."""

    table: str
    key: dict[str, Any]
    before: WireItem | None
    after: WireItem | None


@dataclass(frozen=True)
class Commit:
    """What one successful request changed, in one account and region.

    ``changes``: the items a data-plane request wrote (a transaction's, all of them: one commit).
    ``tables``: the names of the tables a control-plane request created, changed or deleted
    (empty for a data-plane request).
    """

    account: str
    region: str
    operation: str
    changes: tuple[Change, ...] = ()
    tables: tuple[str, ...] = field(default=())


#: Told of every commit, after the store and its index hold it.
Listener = Callable[[Commit], None]

__all__ = ["Change", "Commit", "Listener", "WireItem"]
