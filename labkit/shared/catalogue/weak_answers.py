"""DynamoDB's weak answers, asked for by name: the ``X-Labkit-Weak-Answer`` header, its kinds, where each applies.

A stale read, a read that sees part of a transaction, a batch's ``UnprocessedItems``, a short
page: answers DynamoDB may give that a fresh, whole, full answer hides. The race lab asks for one
per call, the embedded endpoint (profile ``labkit``) gives it or refuses the request with
:func:`weak_answer_misuse`'s sentence. Where each applies derives from the catalogue's sets
(:data:`~labkit.shared.catalogue.records.EVENTUAL_READS`, ``PARTIAL``, ``PAGED``).

A header value is a kind, optionally followed by parameters that name one view exactly
(:class:`WeakForm`, :func:`parse_weak_answer`; docs/reference.md lists them)::

    stale-read                              the first view, newest first, that answers otherwise
    stale-read; behind=2                    what it reads, as of before its 2 latest writes
    stale-read; misses={"PK":{"S":"a"}}     that key as of before its latest write (GetItem, BatchGetItem)
    stale-read; index-misses={"PK":{"S":"a"}}@2, {"PK":{"S":"b"}}
                                            those base items' index entries behind (a GSI Query or Scan)
    torn-read                               the first subset of a recent transaction's writes that answers otherwise
    torn-read; misses={"PK":{"S":"a"}}      that item's write of its latest transaction not yet seen
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from .records import DATA_PLANE_ORDER, EVENTUAL_READS, PAGED, PARTIAL, Op

#: The request header that asks labkit's embedded endpoint (profile ``labkit``) for one of DynamoDB's
#: weak answers (:class:`WeakAnswer`); the answer carries it back, saying what it did.
WEAK_ANSWER_HEADER: Final = "X-Labkit-Weak-Answer"


class WeakAnswer(StrEnum):
    """The answers DynamoDB may give that a fresh, whole, full answer hides (``X-Labkit-Weak-Answer``)."""

    STALE_READ = "stale-read"  # an eventually consistent read, as of before the latest write to what it reads
    TORN_READ = "torn-read"  # a BatchGetItem, Query or Scan that sees some of a transaction's writes, not all
    UNPROCESSED_ITEMS = "unprocessed-items"  # a batch's last item left in UnprocessedItems / UnprocessedKeys
    SHORT_PAGE = "short-page"  # a Query or Scan page that ends after its first item, with a LastEvaluatedKey


#: Where DynamoDB can give each weak answer (stale-read also needs a read without ``ConsistentRead``).
WEAK_ANSWER_OPERATIONS: Final[Mapping[WeakAnswer, frozenset[str]]] = {
    WeakAnswer.STALE_READ: EVENTUAL_READS,
    WeakAnswer.TORN_READ: frozenset({Op.BATCH_GET_ITEM, Op.QUERY, Op.SCAN}),
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
    f"(a global secondary index only reads that way) and to an ExecuteStatement SELECT; "
    f"{WeakAnswer.TORN_READ} to BatchGetItem, Query and Scan; {WeakAnswer.UNPROCESSED_ITEMS} to "
    f"{_listed(PARTIAL)}; {WeakAnswer.SHORT_PAGE} to {_listed(PAGED)}"
)


#: A form's per-item parameters: ``misses`` (keys of the read; for torn-read, a transaction's items)
#: and ``index-misses`` (base items whose global secondary index entries lag).
MISSES: Final = "misses"
INDEX_MISSES: Final = "index-misses"
BEHIND: Final = "behind"


@dataclass(frozen=True)
class WeakForm:
    """One ``X-Labkit-Weak-Answer`` value, parsed: the kind, and the view it names (none: the engine searches).

    ``behind``: what the read reads, as of before its ``behind`` latest writes (stale-read).
    ``misses``: (a key as sorted JSON, how many of its latest writes are not seen): for stale-read
    the keys a GetItem or BatchGetItem reads, for torn-read the items of one transaction.
    ``index``: ``misses`` names base items whose index entries lag (``index-misses``; a GSI read).
    """

    kind: WeakAnswer
    behind: int | None = None
    misses: tuple[tuple[str, int], ...] = ()
    index: bool = False

    @property
    def names_a_view(self) -> bool:
        return self.behind is not None or bool(self.misses)

    def text(self) -> str:
        """The form as the header writes it (the echo of a view given)."""
        parts = [str(self.kind)]
        if self.behind is not None:
            parts.append(f"{BEHIND}={self.behind}")
        if self.misses:
            named = ", ".join(key if n == 1 else f"{key}@{n}" for key, n in self.misses)
            parts.append(f"{INDEX_MISSES if self.index else MISSES}={named}")
        return "; ".join(parts)


class FormError(ValueError):
    """A header value that is not a weak answer's form; the message says why and what is."""


_DECODER = json.JSONDecoder()


def key_name(key: Mapping[str, Any]) -> str:
    """How a form names an item: its key as compact JSON, attributes sorted."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def parse_weak_answer(text: str) -> WeakForm:
    """The form ``text`` names (:class:`WeakForm`); :class:`FormError` saying what is wrong."""
    head, _, rest = text.strip().partition(";")
    kind = head.strip()
    if kind not in WeakAnswer.__members__.values():
        known = ", ".join(WeakAnswer)
        raise FormError(f"unknown weak answer {kind!r} (use one of {known})")
    form = WeakForm(WeakAnswer(kind))
    at = 0
    while at < len(rest):
        name, eq, after = rest[at:].partition("=")
        name = name.strip()
        if not name and not eq:
            break
        if not eq or name not in (BEHIND, MISSES, INDEX_MISSES):
            raise FormError(
                f"{kind}: unknown parameter {name or rest[at:].strip()!r} "
                f"(use {BEHIND}=N, {MISSES}=KEY or {INDEX_MISSES}=KEY; a KEY is the item's key as JSON)"
            )
        at = len(rest) - len(after)
        if name == BEHIND:
            value, _, _ = rest[at:].partition(";")
            at += len(value) + 1
            form = _with_behind(form, value.strip())
        else:
            misses, at = _keys(kind, name, rest, at)
            if form.misses and form.index != (name == INDEX_MISSES):
                raise FormError(f"{kind}: give {MISSES} or {INDEX_MISSES}, not both")
            form = WeakForm(form.kind, form.behind, form.misses + misses, name == INDEX_MISSES)
    if form.behind is not None and form.misses:
        raise FormError(f"{kind}: give {BEHIND} or {form.text().split('; ')[-1].partition('=')[0]}, not both")
    if form.kind is WeakAnswer.TORN_READ and (form.behind is not None or form.index):
        raise FormError(f"{kind} names its view with {MISSES}=KEY[, KEY...]: the items whose writes it does not see")
    if form.kind is WeakAnswer.TORN_READ and any(n != 1 for _, n in form.misses):
        raise FormError(f"{kind}: an item misses one write (its transaction's), so @N does not apply")
    if form.kind not in (WeakAnswer.STALE_READ, WeakAnswer.TORN_READ) and form.names_a_view:
        raise FormError(f"{kind} takes no parameters")
    return form


def _with_behind(form: WeakForm, value: str) -> WeakForm:
    if not value.isdigit() or int(value) < 1:
        raise FormError(f"{form.kind}: {BEHIND} must be a whole number of writes, 1 or more; got {value!r}")
    if form.behind is not None:
        raise FormError(f"{form.kind}: {BEHIND} given twice")
    return WeakForm(form.kind, int(value), form.misses, form.index)


def _keys(kind: str, name: str, rest: str, at: int) -> tuple[tuple[tuple[str, int], ...], int]:
    """The keys a ``misses`` / ``index-misses`` parameter names, from ``rest[at:]``; and where it ends."""
    found: list[tuple[str, int]] = []
    while True:
        while at < len(rest) and rest[at] == " ":
            at += 1
        try:
            key, at = _DECODER.raw_decode(rest, at)
        except ValueError:
            key = None
        if not isinstance(key, dict) or not key or not all(isinstance(v, dict) for v in key.values()):
            raise FormError(
                f'{kind}: {name} takes item keys as JSON, e.g. {name}={{"PK":{{"S":"user#1"}}}}, '
                "several separated by commas"
            )
        steps = 1
        if rest[at : at + 1] == "@":
            digits = ""
            at += 1
            while at < len(rest) and rest[at].isdigit():
                digits, at = digits + rest[at], at + 1
            if not digits or int(digits) < 1:
                raise FormError(f"{kind}: after a key, @N is how many of its latest writes it misses (1 or more)")
            steps = int(digits)
        found.append((key_name(key), steps))
        while at < len(rest) and rest[at] == " ":
            at += 1
        if rest[at : at + 1] == ",":
            at += 1
            continue
        if at < len(rest) and rest[at] != ";":
            raise FormError(f"{kind}: unexpected {rest[at:]!r} after the keys of {name}")
        return tuple(found), at + 1


def weak_answer_misuse(kind: str, operation: str, params: Mapping[str, Any]) -> str | None:
    """Why DynamoDB cannot give the weak answer ``kind`` (a header value: a kind, or a form naming a
    view) to this request, in one sentence that says where each kind applies; None when it can.
    ``params``: the request (its ``ConsistentRead``, its ``IndexName``)."""
    try:
        form = parse_weak_answer(kind)
    except FormError as exc:
        return f"{WEAK_ANSWER_HEADER}: {exc}; {WEAK_ANSWER_WHERE}"
    kind = str(form.kind)
    if operation == Op.EXECUTE_STATEMENT and form.kind is WeakAnswer.STALE_READ and _selects(params):
        if params.get("ConsistentRead") is True:  # the GetItem, Query or Scan it runs as takes the header on
            return (
                f"{WEAK_ANSWER_HEADER}: this SELECT reads with ConsistentRead=True, which is never stale; "
                f"{WEAK_ANSWER_WHERE}"
            )
        return None
    if operation not in WEAK_ANSWER_OPERATIONS[form.kind]:
        return f"{WEAK_ANSWER_HEADER}: DynamoDB never answers {operation} with {kind}; {WEAK_ANSWER_WHERE}"
    if form.kind is WeakAnswer.STALE_READ and not _reads_eventually(operation, params):
        return (
            f"{WEAK_ANSWER_HEADER}: this {operation} reads with ConsistentRead=True, which is never stale; "
            f"{WEAK_ANSWER_WHERE}"
        )
    if form.kind is WeakAnswer.STALE_READ and form.misses:
        keyed = operation in (Op.GET_ITEM, Op.BATCH_GET_ITEM)
        if form.index == keyed or (form.index and not params.get("IndexName")):
            return (
                f"{WEAK_ANSWER_HEADER}: {form.text()}: {MISSES}=KEY names the keys of a GetItem or BatchGetItem "
                f"(each key on its own), {INDEX_MISSES}=KEY the base items of a global secondary index read (each "
                f"entry on its own); a table's partition lags as a whole: use {BEHIND}=N on this {operation}; "
                f"{WEAK_ANSWER_WHERE}"
            )
    return None


def _selects(params: Mapping[str, Any]) -> bool:
    statement = params.get("Statement")
    return isinstance(statement, str) and statement.lstrip()[:6].upper() == "SELECT"


def _reads_eventually(operation: str, params: Mapping[str, Any]) -> bool:
    if operation == Op.BATCH_GET_ITEM:  # ConsistentRead is per table: one eventually consistent table is enough
        tables = params.get("RequestItems")
        entries = tables.values() if isinstance(tables, Mapping) else ()
        return any(not (isinstance(e, Mapping) and e.get("ConsistentRead") is True) for e in entries)
    return params.get("ConsistentRead") is not True


__all__ = [
    "BEHIND",
    "INDEX_MISSES",
    "MISSES",
    "FormError",
    "WeakForm",
    "key_name",
    "parse_weak_answer",
    "WEAK_ANSWER_HEADER",
    "WEAK_ANSWER_NONE",
    "WEAK_ANSWER_OPERATIONS",
    "WEAK_ANSWER_WHERE",
    "WeakAnswer",
    "weak_answer_misuse",
]
