"""``stale-read``: what an eventually consistent read reads, and the views of it as of before recent writes.

:func:`scope` says which kept changes a read reads (the items it names, the partition of its
table or index, the table); :func:`stale` answers the read on the views the image history
(:class:`~labkit.endpoint.store.history.ImageHistory`) gives, inside
:func:`~labkit.endpoint.store.views.as_before`. The stage (:mod:`.stage`) calls it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import Op, WeakAnswer, WeakForm, key_name
from ...shared.partition_keys import canonical
from ..plan import Plan
from ..schema import SchemaOf
from ..store.changes import Change
from ..store.history import STEPS, ImageHistory, Scope, key_text
from ..store.views import as_before
from ..wire.decode import Request

if TYPE_CHECKING:
    from ..store.moto_store import Applied, MotoStore

#: (the read, applied to the store as it stands now) -> its answer.
Read = Callable[[], "Applied"]
#: An answer as the client gets it (projected), to compare two answers.
Finished = Callable[["Applied"], dict[str, Any]]


@dataclass(frozen=True)
class WeakRead:
    """One eventually consistent read the stage answers on a view: what :func:`stale`, :func:`named` and
    :func:`~labkit.endpoint.weak.torn.torn` are given."""

    store: MotoStore
    history: ImageHistory
    request: Request
    #: the kept changes it reads (:func:`scope`)
    reads: Scope
    read: Read
    answer: Finished
    #: the echo of a strong answer, saying why no view was taken
    none: Callable[[str], str]

    def before(self, undo: Sequence[Change]) -> AbstractContextManager[None]:
        """Inside the block, the store as of before ``undo`` (:func:`~labkit.endpoint.store.views.as_before`)."""
        return as_before(self.store, self.request.account, self.request.region, undo)

    def rollbacks(self, steps: int = STEPS) -> Iterator[list[Change]]:
        """The history's views of what it reads, newest first (at most ``steps`` commits back)."""
        return self.history.rollbacks(self.request.account, self.request.region, self.reads, steps=steps)


def scope(request: Request, plan: Plan, schema_of: SchemaOf, every: bool = False) -> Scope:
    """Which changes an eventually consistent read reads: the items it names (``every``: with its
    strongly consistent BatchGetItem keys too), or the partition or table it reads (a Query on an
    index: the changes whose images before or after are in that partition)."""
    params = request.params
    if request.operation in (Op.GET_ITEM, Op.BATCH_GET_ITEM):
        keys = ((table, key_text(key)) for table, key, strong, _ in plan.gets if every or not strong)
        return Scope(items=frozenset(keys))
    table = str(params["TableName"])
    partition = plan.reads[0][1] if plan.reads and request.operation == Op.QUERY else ""
    schema = schema_of(table)
    index = params.get("IndexName")
    found = None if schema is None or index is None else schema.index(str(index))
    hash_key = found.keys[0][0] if found is not None else schema.hash_key if schema is not None else ""
    if not partition or not hash_key:  # a Scan, or a legacy KeyConditions: the table
        return Scope(table=table)

    def in_partition(change: Change) -> bool:
        images = (change.key,) if found is None else (change.before, change.after)
        return any(
            image is not None and hash_key in image and _canonical(image[hash_key]) == partition for image in images
        )

    return Scope(table=table, test=in_partition, keyed=found is None or found.local)


def _canonical(value: Mapping[str, Any]) -> str:
    try:
        return canonical(dict(value))
    except (ValueError, TypeError):  # not a key value (an attribute of another type): no partition
        return ""


def finished(applied: Applied, finish: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """A copy of an answer as the client gets it (projected), to compare two answers."""
    payload = copy.deepcopy(applied.payload)
    finish(payload)
    return payload


def stale(weak: WeakRead) -> tuple[Applied, str]:
    """The read on views as of before the latest commit(s) to what it reads, until one answers
    otherwise than the store does now (the strong answer, if none does)."""
    strong = weak.read()
    strong_answer = weak.answer(strong)
    tried = False
    for undo in weak.rollbacks():
        tried = True
        with weak.before(undo):
            found = weak.read()
        if weak.answer(found) != strong_answer:
            return found, WeakAnswer.STALE_READ.value
    if not tried:
        return strong, weak.none("no earlier image of what it reads is kept")
    return strong, weak.none("the earlier images kept answer as the store does now")


def named(weak: WeakRead, plan: Plan, form: WeakForm) -> tuple[Applied, str]:
    """The read on the one view ``form`` names: what it reads as of before its ``behind`` latest
    writes, or each named key (index entry) as of before its own latest writes; the strong answer
    with ``none; <why>`` when the history does not keep that view."""
    request = weak.request
    undo: list[Change] = []
    if form.behind is not None:
        found = None
        for n, rollback in enumerate(weak.rollbacks(steps=form.behind), 1):
            if n == form.behind:
                found = rollback
        if found is None:
            return weak.read(), weak.none(f"fewer than {form.behind} earlier writes to what it reads are kept")
        undo = found
    for key, steps in form.misses:
        for table in _tables_of(request, plan, key):
            mine = weak.history.latest(request.account, request.region, table, key_text(json.loads(key)), steps)
            if mine is None:
                writes = "write" if steps == 1 else f"{steps} writes"
                return weak.read(), weak.none(f"no earlier image of {key} before its latest {writes} is kept")
            undo += mine
    with weak.before(undo):
        applied = weak.read()
    return applied, form.text()


def _tables_of(request: Request, plan: Plan, key: str) -> list[str]:
    """The tables whose item at ``key`` the read reads (a GetItem's or BatchGetItem's tables; else its table)."""
    if request.operation in (Op.GET_ITEM, Op.BATCH_GET_ITEM):
        return sorted({table for table, k, _, _ in plan.gets if key_name(k) == key})
    return [str(request.params["TableName"])]


def misses_unread(request: Request, plan: Plan, form: WeakForm) -> str | None:
    """The first key ``form`` names that this GetItem or BatchGetItem does not read eventually consistently."""
    if request.operation not in (Op.GET_ITEM, Op.BATCH_GET_ITEM) or form.index:
        return None
    read = {key_name(k) for _, k, strong, _ in plan.gets if not strong or form.kind is WeakAnswer.TORN_READ}
    return next((key for key, _ in form.misses if key not in read), None)


__all__ = ["WeakRead", "finished", "misses_unread", "named", "scope", "stale"]
