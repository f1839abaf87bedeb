"""``stale-read``: what an eventually consistent read reads, and the views of it as of before recent writes.

:func:`scope` says which kept changes a read reads (the items it names, the partition of its
table or index, the table); :func:`stale` answers the read on the views the image history
(:class:`~labkit.endpoint.store.history.ImageHistory`) gives, inside
:func:`~labkit.endpoint.store.views.as_before`. The stage (:mod:`.stage`) calls it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...operations import Op, WeakAnswer
from ...partition_keys import canonical
from ..plan import Plan
from ..schema import SchemaOf
from ..store.changes import Change
from ..store.history import ImageHistory, Scope, key_text
from ..store.views import as_before
from ..wire.decode import Request

if TYPE_CHECKING:
    from ..store.moto_store import Applied, MotoStore

#: (the read, applied to the store as it stands now) -> its answer.
Read = Callable[[], "Applied"]
#: An answer as the client gets it (projected), to compare two answers.
Finished = Callable[["Applied"], dict[str, Any]]


def scope(request: Request, plan: Plan, schema_of: SchemaOf) -> Scope:
    """Which changes an eventually consistent read reads: the items it names, or the partition or
    table it reads (a Query on an index: the changes whose images before or after are in that partition)."""
    params = request.params
    if request.operation in (Op.GET_ITEM, Op.BATCH_GET_ITEM):
        return Scope(items=frozenset((table, key_text(key)) for table, key, strong, _ in plan.gets if not strong))
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

    return Scope(table=table, test=in_partition)


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


def stale(
    store: MotoStore,
    history: ImageHistory,
    request: Request,
    reads: Scope,
    read: Read,
    answer: Finished,
    none: Callable[[str], str],
) -> tuple[Applied, str]:
    """The read on views as of before the latest commit(s) to what it reads, until one answers
    otherwise than the store does now (the strong answer, if none does)."""
    account, region = request.account, request.region
    strong = read()
    strong_answer = answer(strong)
    tried = False
    for undo in history.rollbacks(account, region, reads):
        tried = True
        with as_before(store, account, region, undo):
            found = read()
        if answer(found) != strong_answer:
            return found, WeakAnswer.STALE_READ.value
    if not tried:
        return strong, none("no earlier image of what it reads is kept")
    return strong, none("the earlier images kept answer as the store does now")


__all__ = ["finished", "scope", "stale"]
