"""Singleton items: one item under a constant key holding global state (feature flags).

The item lives at ``PK=SETTINGS#APP``, ``SK=FLAGS#V1``. It is read with ``GetItem``
(never Query or Scan), fails closed to safe defaults when it is missing or unreadable,
is cached per process, and is changed with a version-guarded ``UpdateItem`` that
touches only the attributes asked for.

Two version numbers, kept apart on purpose:

* the **shape** of the item is versioned in its key (``FLAGS#V1`` -> ``FLAGS#V2``, see
  :func:`migrate` and :func:`retire`);
* the ``version`` attribute counts **changes** to one item: every successful write adds 1,
  and every safe write is conditioned on the version it read (optimistic locking).
  The source article calls it ``schema_version``; that name suggests the shape, which is
  the key's job, so labkit calls it ``version``.

Size guard: a write that would make the item need more 4 KB read units issues an
:class:`~labkit.shared.errors.ItemSizeWarning` (``warnings.warn``: the write still happens, every
read costs more); above 400 KB it raises :class:`~labkit.shared.errors.ItemTooLarge` and writes
nothing.

Anti-patterns kept on purpose for the lesson: :func:`unsafe_set_flags` / :func:`unsafe_update`
(read-modify-write with PutItem: loses updates) and :func:`unsafe_scan_read` (Scan + filter:
reads the whole table to return one item).

Modules: ``schema`` (flags), ``results`` (what reads and writes return), ``cache``,
``store`` (:class:`FlagStore`), ``antipatterns``, ``migration``.
"""

from __future__ import annotations

from .antipatterns import unsafe_scan_read, unsafe_set_flags, unsafe_update
from .cache import FlagCache, exponential_jitter
from .migration import lost_changes, migrate, retire, stored_item
from .results import FlagRead, MigrationResult, UpdateResult
from .schema import DEFAULT_SCHEMA, VERSION_ATTR, Flag, FlagSchema
from .store import FlagStore

__all__ = [
    "DEFAULT_SCHEMA",
    "Flag",
    "FlagCache",
    "FlagRead",
    "FlagSchema",
    "FlagStore",
    "MigrationResult",
    "UpdateResult",
    "VERSION_ATTR",
    "exponential_jitter",
    "lost_changes",
    "migrate",
    "retire",
    "stored_item",
    "unsafe_scan_read",
    "unsafe_set_flags",
    "unsafe_update",
]
