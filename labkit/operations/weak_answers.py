"""DynamoDB's weak answers, asked for by name: the ``X-Labkit-Weak-Answer`` header, its kinds, where each applies.

A stale read, a batch's ``UnprocessedItems``, a short page: answers DynamoDB may give that a fresh,
whole, full answer hides. The race lab asks for one per call, the embedded endpoint (profile
``labkit``) gives it or refuses the request with :func:`weak_answer_misuse`'s sentence. Where each
applies derives from the catalogue's sets (:data:`~labkit.operations.catalogue.EVENTUAL_READS`,
``PARTIAL``, ``PAGED``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from .catalogue import DATA_PLANE_ORDER, EVENTUAL_READS, PAGED, PARTIAL, Op

#: The request header that asks labkit's embedded endpoint (profile ``labkit``) for one of DynamoDB's
#: weak answers (:class:`WeakAnswer`); the answer carries it back, saying what it did.
WEAK_ANSWER_HEADER: Final = "X-Labkit-Weak-Answer"


class WeakAnswer(StrEnum):
    """The answers DynamoDB may give that a fresh, whole, full answer hides (``X-Labkit-Weak-Answer``)."""

    STALE_READ = "stale-read"  # an eventually consistent read, as of before the latest write to what it reads
    UNPROCESSED_ITEMS = "unprocessed-items"  # a batch's last item left in UnprocessedItems / UnprocessedKeys
    SHORT_PAGE = "short-page"  # a Query or Scan page that ends after its first item, with a LastEvaluatedKey


#: Where DynamoDB can give each weak answer (stale-read also needs a read without ``ConsistentRead``).
WEAK_ANSWER_OPERATIONS: Final[Mapping[WeakAnswer, frozenset[str]]] = {
    WeakAnswer.STALE_READ: EVENTUAL_READS,
    WeakAnswer.UNPROCESSED_ITEMS: PARTIAL,
    WeakAnswer.SHORT_PAGE: PAGED,
}
#: The echo of an answer that could not differ from the strong one starts with this: ``none; <reason>``.
WEAK_ANSWER_NONE: Final = "none"


def _listed(names: frozenset[str]) -> str:
    ordered = [name for name in DATA_PLANE_ORDER if name in names]
    return ", ".join(ordered[:-1]) + " and " + ordered[-1] if len(ordered) > 1 else "".join(ordered)


#: Where each weak answer applies, in words (the endpoint's 400 and the race lab's error say it).
WEAK_ANSWER_WHERE: Final = (
    f"{WeakAnswer.STALE_READ} applies to {_listed(EVENTUAL_READS)} without ConsistentRead=True "
    f"(a global secondary index only reads that way); {WeakAnswer.UNPROCESSED_ITEMS} to "
    f"{_listed(PARTIAL)}; {WeakAnswer.SHORT_PAGE} to {_listed(PAGED)}"
)


def weak_answer_misuse(kind: str, operation: str, params: Mapping[str, Any]) -> str | None:
    """Why DynamoDB cannot give the weak answer ``kind`` to this request, in one sentence that says
    where each kind applies; None when it can. ``params``: the request (its ``ConsistentRead``)."""
    if kind not in WeakAnswer.__members__.values():
        known = ", ".join(WeakAnswer)
        return f"{WEAK_ANSWER_HEADER}: unknown weak answer {kind!r} (use one of {known}); {WEAK_ANSWER_WHERE}"
    if operation not in WEAK_ANSWER_OPERATIONS[WeakAnswer(kind)]:
        return f"{WEAK_ANSWER_HEADER}: DynamoDB never answers {operation} with {kind}; {WEAK_ANSWER_WHERE}"
    if kind == WeakAnswer.STALE_READ and not _reads_eventually(operation, params):
        return (
            f"{WEAK_ANSWER_HEADER}: this {operation} reads with ConsistentRead=True, which is never stale; "
            f"{WEAK_ANSWER_WHERE}"
        )
    return None


def _reads_eventually(operation: str, params: Mapping[str, Any]) -> bool:
    if operation == Op.BATCH_GET_ITEM:  # ConsistentRead is per table: one eventually consistent table is enough
        tables = params.get("RequestItems")
        entries = tables.values() if isinstance(tables, Mapping) else ()
        return any(not (isinstance(e, Mapping) and e.get("ConsistentRead") is True) for e in entries)
    return params.get("ConsistentRead") is not True


__all__ = [
    "WEAK_ANSWER_HEADER",
    "WEAK_ANSWER_NONE",
    "WEAK_ANSWER_OPERATIONS",
    "WEAK_ANSWER_WHERE",
    "WeakAnswer",
    "weak_answer_misuse",
]
