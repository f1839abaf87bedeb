"""The operation catalogue: one record per operation labkit's engine serves, and what labkit knows of it.

Every set of operation names in labkit derives from :data:`CATALOGUE` — the engine's stages
(which operations are validated whole, metered, seen by hooks, answered by moto's fast path),
the race lab's reads, writes and whole-table calls, where the fault kinds can be given, and what
costs count as a write. Adding an operation is one record in :mod:`~labkit.shared.catalogue.records`
and one module in the engine (``docs/architecture.md`` walks through it).
``tests/architecture/test_operation_names.py`` fails on an operation-name string literal anywhere
in ``labkit/`` outside that module: code names operations as :class:`Op` members (``Op.GET_ITEM``,
a ``str``) or through the derived sets.

Three modules, each one job, their names re-exported here (``from labkit.shared.catalogue import Op``):

:mod:`~labkit.shared.catalogue.records`
    the records (:class:`Op`, :class:`Operation`, :data:`CATALOGUE`) and the sets derived from them
    (``DATA_PLANE``, ``READS``, ``WRITES``, ``CONFLICTABLE``, ...): the one place names are written;
:mod:`~labkit.shared.catalogue.requests`
    what a request names: its items (:func:`item_keys`), its tables (:func:`tables_of`), the
    actions of a transaction (``TRANSACT_ACTIONS``, ``ACTION_OF``);
:mod:`~labkit.shared.catalogue.weak_answers`
    DynamoDB's weak answers asked for by name: ``X-Labkit-Weak-Answer``, :class:`WeakAnswer`,
    where each applies and :func:`weak_answer_misuse`.
"""

from __future__ import annotations

from . import records
from .records import *  # noqa: F403 - re-exports records.__all__, named once there
from .requests import ACTION_OF, TRANSACT_ACTIONS, is_write, item_keys, tables_of
from .weak_answers import (
    WEAK_ANSWER_HEADER,
    WEAK_ANSWER_NONE,
    WEAK_ANSWER_OPERATIONS,
    WEAK_ANSWER_WHERE,
    FormError,
    WeakAnswer,
    WeakForm,
    key_name,
    parse_weak_answer,
    weak_answer_misuse,
)

__all__ = [
    "FormError",
    "WeakForm",
    "key_name",
    "parse_weak_answer",
    "ACTION_OF",
    "TRANSACT_ACTIONS",
    "WEAK_ANSWER_HEADER",
    "WEAK_ANSWER_NONE",
    "WEAK_ANSWER_OPERATIONS",
    "WEAK_ANSWER_WHERE",
    "WeakAnswer",
    "is_write",
    "item_keys",
    "tables_of",
    "weak_answer_misuse",
]
__all__ += records.__all__
