"""Anomalies named from a run's history, with no invariant to write: each defined here, once.

:func:`find` reads one run's call records (``Interleaving.records``: who called, in which turn,
what was asked, what came back — ``outcome``, ``found``, ``more``, ``left``, ``injected``,
``retries``) and names every anomaly below it shows, each with the calls that show it, in turn
order. Items are named by their table's key schema (:func:`~labkit.races.identity.item_access`),
never guessed. A call is *applied* when its outcome is ``ok``; calls are ordered by their turns.
A call is named as faults are (:func:`~labkit.engine_plugins.faults.kinds.call_point`): ``A2`` is actor A's second
call, ``A.1#2`` the second call of the first thread A started.

``lost-update``
    Actor X read an item (a GetItem, BatchGetItem or TransactGetItems that named it), another
    actor Y then applied a write to it, and X then applied a write to
    it — a PutItem (or a transaction's or batch's Put) of the item, or an update that SETs to a
    value (``SET a = :v``) or REMOVEs an attribute Y's write set, added to, or removed (a Put or a
    Delete sets every attribute) — with no read of the item by X between Y's write and its own. X's
    write was applied, so whatever condition it carried did not fail: a version guard would have.
    An update computed by DynamoDB from the stored value (``ADD``, ``SET n = n + :d``) loses
    nothing, and is not one; a Put after a read that found nothing is a check-then-write duplicate.
``check-then-write-duplicate``
    Actor X read and found nothing — a GetItem that found no item for a key, or a Query or Scan
    that found no item whose attribute equals a value (``email = :e`` in its key condition, on an
    index, or in its filter) — another actor Y then created it (applied a Put or an update of that
    item; for a value, a Put of an item holding it), and X then applied a Put of the same item, or
    of an item holding the same value. Applied: no ``attribute_not_exists`` condition on the item
    and no marker item (a transaction's conditional Put of the value's marker) stopped it.
``applied-twice``
    A non-idempotent write — an update with ``ADD`` of a number, a ``SET`` computed with ``+``,
    ``-`` or ``list_append``, a PutItem with no condition — whose answer was lost (the
    ``lose-response`` fault: applied, answer lost; the ``injected`` column) was applied again by a
    resend: botocore's own (the call was retried and its outcome is ``ok``) or the same actor's
    next write that repeats it (the same operation, table and update expression on the same item;
    for a PutItem with no condition, a Put of a new key with the same attributes). A transaction
    is resent with its ClientRequestToken (botocore's, or the caller's), which DynamoDB answers
    without applying it again: a transaction's resend with the same token is never one.
``dropped-batch-items``
    A BatchWriteItem or BatchGetItem answered with requests left in ``UnprocessedItems`` /
    ``UnprocessedKeys`` (``left`` above 0: the ``unprocessed-items`` weak answer), and its actor
    made no later call of the same operation carrying any of that batch's requests.
``page-taken-as-the-whole``
    A Query or Scan without ``Limit`` answered with a ``LastEvaluatedKey`` (``more``: the
    ``short-page`` weak answer), and its actor made no later request for the next page: the same
    operation with the same parameters and an ``ExclusiveStartKey``.

An actor whose run ended in an error reported its failure: ``dropped-batch-items`` and
``page-taken-as-the-whole`` are not named for its calls (``failed``). What is not read: PartiQL
statements, and the items of a batch that left some unprocessed (which ones is not recorded); a
stale read (``stale-read``: its answer is older than its turn) is read as of its turn.
:func:`check_allow` checks explore's ``allow=[...]`` against :data:`ANOMALIES`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine_plugins.faults.kinds import call_point
from ..shared.catalogue import Op
from ..shared.errors import ValidationError
from .identity import Access, KeyNames, canonical, item_access

LOST_UPDATE = "lost-update"
CHECK_THEN_WRITE = "check-then-write-duplicate"
APPLIED_TWICE = "applied-twice"
DROPPED_BATCH_ITEMS = "dropped-batch-items"
PAGE_AS_WHOLE = "page-taken-as-the-whole"
#: Every anomaly :func:`find` names, in the order it reports them.
ANOMALIES: tuple[str, ...] = (LOST_UPDATE, CHECK_THEN_WRITE, APPLIED_TWICE, DROPPED_BATCH_ITEMS, PAGE_AS_WHOLE)

#: A table's key schema in a region: ``(region, table) -> (hash, range)`` (:class:`~labkit.races.identity.KeySchemas`).
RegionSchemaOf = Callable[[str | None, str], "KeyNames | None"]
#: Every attribute (a Put or a Delete sets them all).
EVERY = frozenset({"\0every"})


@dataclass(frozen=True)
class Anomaly:
    """One anomaly of one run: its name, what it is about, the calls that show it (in turn order), a sentence."""

    kind: str
    #: the item (``ACCT#1/PROFILE``), the value (``email = ada@x.io``), the batch or the query
    about: str
    #: the calls, named as faults are (``("A1", "B2", "A2")``), in turn order
    calls: tuple[str, ...]
    message: str
    #: the run it was found in: its order (``"A B A"``) and faults (explore fills them in)
    order: str = ""
    faults: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message

    def where(self) -> str:
        """The run, as a counterexample is named: ``'A B A' with B2: lose-response``."""
        return f"{self.order!r}" + (f" with {', '.join(self.faults)}" if self.faults else "")


def check_allow(allow: Iterable[str] | str | None) -> frozenset[str]:
    """explore's ``allow=[...]``: anomalies a test accepts, by name; an unknown name is a ValidationError."""
    if allow is None:
        return frozenset()
    if isinstance(allow, str) or not isinstance(allow, Iterable):
        raise ValidationError(f"allow is {allow!r}: give a list of anomaly names, e.g. allow=['lost-update']")
    names = list(allow)
    unknown = [n for n in names if n not in ANOMALIES]
    if unknown:
        raise ValidationError(
            f"allow names unknown anomal{'ies' if len(unknown) > 1 else 'y'} {', '.join(map(repr, unknown))}; "
            f"the anomalies are {', '.join(ANOMALIES)}"
        )
    return frozenset(names)


# ---------------------------------------------------------------- what one call did


@dataclass(frozen=True)
class _Action:
    """One item a call reads or writes: Get, Put, Update, Delete or ConditionCheck."""

    kind: str
    item: Access
    body: Mapping[str, Any]
    #: the attributes it sets, adds to or removes (EVERY: a Put, a Delete)
    touched: frozenset[str]
    #: the attributes it sets to a value from the caller (``SET a = :v``, REMOVE; EVERY: a Put)
    blind: frozenset[str]
    #: ADD of a number, SET with + - or list_append: applying it twice is not applying it once
    accumulates: bool


@dataclass(frozen=True)
class _Call:
    name: str
    actor: str
    at: int
    operation: str
    params: Mapping[str, Any]
    ok: bool
    found: bool | None
    more: bool
    left: int
    injected: str
    retries: int
    actions: tuple[_Action, ...]

    @property
    def lost_answer(self) -> bool:
        return self.injected.startswith("lose-response")

    def reads(self) -> Iterator[_Action]:
        return (a for a in self.actions if a.kind == "Get")

    def writes(self) -> Iterator[_Action]:
        return (a for a in self.actions if a.kind in ("Put", "Update", "Delete"))


_CLAUSE = re.compile(r"(?i)(?<![#:\w])(SET|REMOVE|ADD|DELETE)(?![\w])")
_PLACEHOLDER = re.compile(r"^\s*:[A-Za-z0-9_]+\s*$")


def _top(path: str, names: Mapping[str, Any]) -> str:
    """``#a.b[0]`` -> the top-level attribute's name (``#a`` resolved)."""
    head = re.split(r"[.\[]", path.strip(), maxsplit=1)[0].strip()
    return str(names.get(head, head)) if head.startswith("#") else head


def _split(text: str) -> list[str]:
    """Comma-separated parts at parenthesis depth 0."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (x.strip() for x in parts) if p]


def _update(body: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str], bool]:
    """An UpdateExpression's touched and blind attributes, and whether it accumulates."""
    text = body.get("UpdateExpression")
    names = body.get("ExpressionAttributeNames") or {}
    values = body.get("ExpressionAttributeValues") or {}
    if not isinstance(text, str):  # legacy AttributeUpdates: PUT is blind, ADD accumulates
        updates = body.get("AttributeUpdates") or {}
        put = frozenset(k for k, v in updates.items() if (v or {}).get("Action", "PUT") in ("PUT", "DELETE"))
        adds = any((v or {}).get("Action") == "ADD" and "N" in ((v or {}).get("Value") or {}) for v in updates.values())
        return frozenset(updates), put, adds
    touched: set[str] = set()
    blind: set[str] = set()
    accumulates = False
    marks = list(_CLAUSE.finditer(text))
    for i, mark in enumerate(marks):
        clause = mark.group(1).upper()
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        for part in _split(text[mark.end() : end]):
            if clause == "SET":
                path, _, expr = part.partition("=")
                attr = _top(path, names)
                touched.add(attr)
                if _PLACEHOLDER.match(expr):
                    blind.add(attr)
                elif "+" in expr or "-" in expr.replace("if_not_exists", "") or "list_append" in expr:
                    accumulates = True
            else:
                bits = part.split()
                attr = _top(bits[0], names) if bits else ""
                touched.add(attr)
                if clause == "REMOVE":
                    blind.add(attr)
                elif clause == "ADD" and len(bits) > 1 and "N" in (values.get(bits[1]) or {}):
                    accumulates = True
    return frozenset(touched), frozenset(blind), accumulates


def _actions(
    operation: str, params: Mapping[str, Any], schema_of: Callable[[str], KeyNames | None]
) -> Iterator[_Action]:
    def one(kind: str, table: Any, attrs: Any, body: Mapping[str, Any]) -> _Action | None:
        if not isinstance(table, str) or not isinstance(attrs, Mapping):
            return None
        item = item_access(table, attrs, kind not in ("Get", "ConditionCheck"), schema_of)
        if item.hash is None:
            return None  # no key schema: nothing exact to say about it
        if kind == "Update":
            touched, blind, accumulates = _update(body)
        elif kind in ("Put", "Delete"):
            touched, blind, accumulates = EVERY, EVERY, False
        else:
            touched, blind, accumulates = frozenset(), frozenset(), False
        return _Action(kind, item, body, touched, blind, accumulates)

    single: dict[str, str] = {
        Op.GET_ITEM: "Get",
        Op.PUT_ITEM: "Put",
        Op.UPDATE_ITEM: "Update",
        Op.DELETE_ITEM: "Delete",
    }
    found: list[_Action | None] = []
    if operation in single:
        kind = single[operation]
        found.append(one(kind, params.get("TableName"), params.get("Item" if kind == "Put" else "Key"), params))
    elif operation in (Op.TRANSACT_WRITE_ITEMS, Op.TRANSACT_GET_ITEMS):
        for entry in params.get("TransactItems") or ():
            for kind, body in entry.items() if isinstance(entry, Mapping) else ():
                if isinstance(body, Mapping):
                    attrs = body.get("Item" if kind == "Put" else "Key")
                    found.append(one(kind, body.get("TableName"), attrs, body))
    elif operation == Op.BATCH_GET_ITEM:
        for table, request in (params.get("RequestItems") or {}).items():
            for key in (request.get("Keys") or ()) if isinstance(request, Mapping) else ():
                found.append(one("Get", table, key, {}))
    elif operation == Op.BATCH_WRITE_ITEM:
        for table, requests in (params.get("RequestItems") or {}).items():
            for entry in requests if isinstance(requests, list) else ():
                put, delete = (
                    (entry.get("PutRequest"), entry.get("DeleteRequest"))
                    if isinstance(entry, Mapping)
                    else (None, None)
                )
                if isinstance(put, Mapping):
                    found.append(one("Put", table, put.get("Item"), put))
                elif isinstance(delete, Mapping):
                    found.append(one("Delete", table, delete.get("Key"), delete))
    yield from (a for a in found if a is not None)


def _calls(records: Sequence[Mapping[str, Any]], schema_of: RegionSchemaOf) -> list[_Call]:
    ordered = sorted(
        records,
        key=lambda r: (r.get("turn") is None, r.get("turn") or 0, r.get("start") or 0.0),
    )
    out = []
    for at, r in enumerate(ordered):
        region, operation, params = r.get("region"), str(r.get("operation")), r.get("params") or {}

        def of(table: str, region: Any = region) -> KeyNames | None:
            return schema_of(region, table)

        left = int(r.get("left") or 0)
        # a batch that left requests unprocessed: which items it read or wrote is not known, so none
        actions = () if left else tuple(_actions(operation, params, of))
        out.append(
            _Call(
                name=call_point(str(r.get("actor")), int(r.get("seq") or 0) + 1),
                actor=str(r.get("actor")),
                at=at,
                operation=operation,
                params=params,
                ok=r.get("outcome") == "ok",
                found=r.get("found"),
                more=bool(r.get("more")),
                left=left,
                injected=str(r.get("injected") or ""),
                retries=int(r.get("retries") or 0),
                actions=actions,
            )
        )
    return out


def label(item: Access) -> str:
    """An item as people name it: ``ACCT#1/PROFILE``."""
    return "/".join(v[1] for v in (item.hash, item.range) if v is not None)


def _said(call: _Call) -> str:
    return f"{call.name} {call.operation}"


# ---------------------------------------------------------------- the anomalies


def _lost_updates(calls: Sequence[_Call]) -> Iterator[Anomaly]:
    for x in calls:
        if not x.ok:
            continue
        for mine in x.writes():
            if mine.kind == "Delete" or not mine.blind:
                continue
            item = mine.item
            reads = [c for c in calls[: x.at] if c.actor == x.actor and any(_same(a.item, item) for a in c.reads())]
            if not reads:
                continue
            read = reads[-1]
            if read.found is False and mine.kind == "Put":
                continue  # a create after a read that found nothing: check-then-write's
            for w in calls[read.at + 1 : x.at]:
                if w.actor == x.actor or not w.ok:
                    continue
                theirs = [
                    a
                    for a in w.writes()
                    if _same(a.item, item) and (a.touched & mine.blind or EVERY in (a.touched, mine.blind))
                ]
                if theirs:
                    overlap = sorted(mine.blind & theirs[0].touched - EVERY) or sorted(mine.blind - EVERY)
                    what = "" if mine.kind == "Put" else f": sets {', '.join(overlap)}"
                    yield Anomaly(
                        LOST_UPDATE,
                        label(item),
                        (read.name, w.name, x.name),
                        f"lost update: {x.actor} read {label(item)} ({_said(read)}), {w.actor} wrote it ({_said(w)}), "
                        f"{x.actor} wrote it unconditionally ({_said(x)}{what}), from what it read before "
                        f"{w.actor}'s write",
                    )
                    break


def _same(a: Access, b: Access) -> bool:
    return (a.table, a.hash, a.range) == (b.table, b.hash, b.range)


_EQ = re.compile(r"(#[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(:[A-Za-z0-9_]+)")


def _equalities(params: Mapping[str, Any]) -> dict[str, Any]:
    """``attr = :v`` conjuncts of a Query's key condition and filter, or a Scan's filter (none with OR/NOT)."""
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    out: dict[str, Any] = {}
    for field in ("KeyConditionExpression", "FilterExpression"):
        text = params.get(field)
        if not isinstance(text, str) or re.search(r"(?i)\b(OR|NOT)\b", text):
            continue
        for name, value in _EQ.findall(text):
            attr = str(names.get(name, name)) if name.startswith("#") else name
            if value in values and canonical(values[value]) is not None:
                out[attr] = canonical(values[value])
    return out


def _holds(item: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(canonical(item.get(attr)) == value for attr, value in wanted.items())


def _check_then_writes(calls: Sequence[_Call]) -> Iterator[Anomaly]:
    for r in calls:
        if r.found is not False:
            continue
        if r.operation == Op.GET_ITEM:
            missing = [a.item for a in r.reads()]
            for x in calls[r.at + 1 :]:
                if x.actor != r.actor or not x.ok:
                    continue
                puts = [a for a in x.writes() if a.kind == "Put" and any(_same(a.item, m) for m in missing)]
                if not puts:
                    continue
                item = puts[0].item
                made = [
                    w
                    for w in calls[r.at + 1 : x.at]
                    if w.actor != r.actor
                    and w.ok
                    and any(a.kind in ("Put", "Update") and _same(a.item, item) for a in w.writes())
                ]
                if made:
                    yield _duplicate(r, made[0], x, label(item), f"found no item {label(item)}", "created it")
                    break
        elif r.operation in (Op.QUERY, Op.SCAN):
            wanted = _equalities(r.params)
            if not wanted or not _holds_any_key(r):
                continue
            about = ", ".join(f"{k} = {v[1]}" for k, v in sorted(wanted.items()))
            for x in calls[r.at + 1 :]:
                if x.actor != r.actor or not x.ok:
                    continue
                puts = [a for a in x.writes() if a.kind == "Put" and _holds(a.body.get("Item") or {}, wanted)]
                if not puts:
                    continue
                made = [
                    w
                    for w in calls[r.at + 1 : x.at]
                    if w.actor != r.actor
                    and w.ok
                    and any(a.kind == "Put" and _holds(a.body.get("Item") or {}, wanted) for a in w.writes())
                ]
                if made:
                    yield _duplicate(r, made[0], x, about, f"found no item with {about}", "created one")
                    break


def _holds_any_key(call: _Call) -> bool:
    """A Query or Scan read has equalities to look for (its table named)."""
    return isinstance(call.params.get("TableName"), str)


def _duplicate(r: _Call, w: _Call, x: _Call, about: str, found: str, made: str) -> Anomaly:
    return Anomaly(
        CHECK_THEN_WRITE,
        about,
        (r.name, w.name, x.name),
        f"check-then-write duplicate: {r.actor}'s read {found} ({_said(r)}), {w.actor} then {made} ({_said(w)}), "
        f"and {x.actor} created it again ({_said(x)}) with no attribute_not_exists condition or marker to stop it",
    )


def _token(call: _Call) -> Any:
    return call.params.get("ClientRequestToken")


def _repeats(first: _Call, again: _Call) -> bool:
    """``again`` is ``first`` sent again: the same operation and table, the same update on the same item,
    or for an unconditioned Put, a Put of any key with the same attributes."""
    if first.operation != again.operation or len(first.actions) != len(again.actions):
        return False
    for a, b in zip(first.writes(), again.writes(), strict=False):
        if a.kind != b.kind or a.item.table != b.item.table:
            return False
        if a.kind == "Put":
            if set(a.body.get("Item") or {}) != set(b.body.get("Item") or {}):
                return False
        elif not _same(a.item, b.item) or a.body.get("UpdateExpression") != b.body.get("UpdateExpression"):
            return False
    return True


def _non_idempotent(call: _Call) -> list[_Action]:
    return [
        a
        for a in call.writes()
        if a.accumulates or (a.kind == "Put" and not a.body.get("ConditionExpression") and not a.body.get("Expected"))
    ]


def _applied_twice(calls: Sequence[_Call]) -> Iterator[Anomaly]:
    for r in calls:
        if not r.lost_answer:
            continue
        what = _non_idempotent(r)
        if not what:
            continue
        about = label(what[0].item)
        resent = r.retries and r.ok and r.operation != Op.TRANSACT_WRITE_ITEMS  # a transaction keeps its token
        if resent and any(a.kind != "Put" for a in what):  # botocore's resend of a Put puts the same item again
            yield Anomaly(
                APPLIED_TWICE,
                about,
                (r.name,),
                f"applied twice: {_said(r)} on {about} was applied, its answer lost ({r.injected}), and "
                f"botocore's resend (retries={r.retries}) applied it again",
            )
            continue
        later = [c for c in calls[r.at + 1 :] if c.actor == r.actor and any(c.writes())]
        if not later:
            continue
        again = later[0]
        if not again.ok or not _repeats(r, again):
            continue
        if _token(r) is not None and _token(r) == _token(again):
            continue  # DynamoDB answers the same token's resend without applying it again
        if all(a.kind == "Put" for a in what) and all(
            _same(a.item, b.item) for a, b in zip(r.writes(), again.writes(), strict=False)
        ):
            continue  # the same Put of the same item is idempotent
        yield Anomaly(
            APPLIED_TWICE,
            about,
            (r.name, again.name),
            f"applied twice: {_said(r)} on {about} was applied, its answer lost ({r.injected}), and "
            f"{r.actor} sent it again ({_said(again)}), applied again",
        )


def _requests(call: _Call) -> set[str]:
    out: set[str] = set()
    for table, entries in (call.params.get("RequestItems") or {}).items():
        listed = entries if isinstance(entries, list) else (entries or {}).get("Keys") or []
        for entry in listed:
            out.add(json.dumps([table, entry], sort_keys=True, default=str))
    return out


def _dropped(calls: Sequence[_Call], failed: Collection[str]) -> Iterator[Anomaly]:
    for b in calls:
        if not b.ok or b.left <= 0 or b.actor in failed:
            continue
        sent = _requests(b)
        if any(c.actor == b.actor and c.operation == b.operation and _requests(c) & sent for c in calls[b.at + 1 :]):
            continue
        where = "UnprocessedItems" if b.operation == Op.BATCH_WRITE_ITEM else "UnprocessedKeys"
        yield Anomaly(
            DROPPED_BATCH_ITEMS,
            f"{b.name} {b.operation}",
            (b.name,),
            f"dropped batch items: {_said(b)} came back with {b.left} request(s) in {where}, and "
            f"{b.actor} never sent them again",
        )


def _without_start(params: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in params.items() if k != "ExclusiveStartKey"}, sort_keys=True, default=str)


def _pages(calls: Sequence[_Call], failed: Collection[str]) -> Iterator[Anomaly]:
    for q in calls:
        if not q.ok or not q.more or "Limit" in q.params or q.actor in failed:
            continue
        same = _without_start(q.params)
        if any(
            c.actor == q.actor
            and c.operation == q.operation
            and "ExclusiveStartKey" in c.params
            and _without_start(c.params) == same
            for c in calls[q.at + 1 :]
        ):
            continue
        what = q.params.get("IndexName") or q.params.get("TableName")
        yield Anomaly(
            PAGE_AS_WHOLE,
            f"{q.name} {q.operation} of {what}",
            (q.name,),
            f"page taken as the whole: {_said(q)} of {what} answered one page with a LastEvaluatedKey "
            f"(no Limit was asked for), and {q.actor} never asked for the next page",
        )


def find(
    records: Sequence[Mapping[str, Any]],
    schema_of: RegionSchemaOf,
    failed: Collection[str] = (),
    allow: Collection[str] = (),
) -> list[Anomaly]:
    """Every anomaly one run's history shows (module docstring), in :data:`ANOMALIES` order, then turn order.

    ``schema_of(region, table)`` is each table's key schema (explore's
    :class:`~labkit.races.identity.KeySchemas`); ``failed``, the actors whose run ended in an
    error; ``allow``, the anomalies not to report.
    """
    calls = _calls(records, schema_of)
    found: list[Anomaly] = []
    for kind, each in (
        (LOST_UPDATE, _lost_updates(calls)),
        (CHECK_THEN_WRITE, _check_then_writes(calls)),
        (APPLIED_TWICE, _applied_twice(calls)),
        (DROPPED_BATCH_ITEMS, _dropped(calls, failed)),
        (PAGE_AS_WHOLE, _pages(calls, failed)),
    ):
        if kind not in allow:
            found.extend(each)
    return found


__all__ = [
    "ANOMALIES",
    "APPLIED_TWICE",
    "CHECK_THEN_WRITE",
    "DROPPED_BATCH_ITEMS",
    "LOST_UPDATE",
    "PAGE_AS_WHOLE",
    "Anomaly",
    "check_allow",
    "find",
    "label",
]
