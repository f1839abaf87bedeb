"""The image history and the stale views it feeds: bounded per item and in all, forgotten when a
table changes; a stale view is never a write (the durable log and a restart never see it) and the
store's partitions index comes back from it exactly (checked against moto's walk of the table);
a stale answer is one the store really had (checked against the answers recorded after each write)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.embedded import start_endpoint
from labkit.endpoint import DynamoEngine
from labkit.endpoint.store import durable
from labkit.endpoint.store.changes import Change, Commit
from labkit.endpoint.store.history import STEPS, ImageHistory, Scope, key_text
from labkit.shared.catalogue import WEAK_ANSWER_HEADER, key_name
from tests.endpoint.clients import engine_headers, raw_client
from tests.endpoint.fuzz_settings import FUZZ
from tests.endpoint.memory_probe import measure_memory
from tests.endpoint.tables import key, make_table

ACCOUNT, REGION = "123456789012", "us-east-1"
ECHO = WEAK_ANSWER_HEADER.lower()


def _commit(table: str, pk: str, before: int | None, after: int | None, *more: Change) -> Commit:
    def image(v: int | None) -> dict[str, Any] | None:
        return None if v is None else {"PK": {"S": pk}, "v": {"N": str(v)}}

    return Commit(ACCOUNT, REGION, "PutItem", (Change(table, {"PK": {"S": pk}}, image(before), image(after)), *more))


# the history's bounds --------------------------------------------------------------------------


def test_history__per_item__keeps_only_the_latest_changes_of_an_item() -> None:
    history = ImageHistory(per_item=3)
    for v in range(100):
        history(_commit("t", "one", v, v + 1))
    assert len(history) == 3
    undone = list(history.rollbacks(ACCOUNT, REGION, Scope(table="t"), steps=10))
    assert [[c.before["v"]["N"] for c in undo if c.before] for undo in undone] == [
        ["99"],
        ["99", "98"],
        ["99", "98", "97"],
    ]


def test_history__in_all__keeps_at_most_the_count_and_the_bytes_it_is_given() -> None:
    by_count = ImageHistory(changes=50)
    for n in range(1000):
        by_count(_commit("t", f"item{n}", None, n))
    assert len(by_count) == 50
    by_size = ImageHistory(size=10_000)
    for n in range(1000):
        by_size(_commit("t", f"item{n}", None, n))
    assert 0 < by_size.bytes <= 10_000 and len(by_size) < 1000


def test_history__rollbacks__one_commit_at_a_time_newest_first_only_changes_in_scope() -> None:
    """A transaction's changes are one commit: undone together; changes outside the scope are never undone."""
    history = ImageHistory()
    history(_commit("t", "a", None, 1))
    history(_commit("t", "b", None, 1, Change("t", {"PK": {"S": "c"}}, None, {"PK": {"S": "c"}})))
    history(_commit("other", "a", None, 1))
    in_t = list(history.rollbacks(ACCOUNT, REGION, Scope(table="t")))
    assert [[c.key["PK"]["S"] for c in undo] for undo in in_t] == [["c", "b"], ["c", "b", "a"]]
    assert list(history.rollbacks(ACCOUNT, REGION, Scope(table="t", test=lambda change: False))) == []
    assert list(history.rollbacks("999999999999", REGION, Scope(table="t"))) == []
    named = Scope(items=frozenset({("t", key_text({"PK": {"S": "a"}})), ("other", key_text({"PK": {"S": "a"}}))}))
    assert [[c.table for c in undo] for undo in history.rollbacks(ACCOUNT, REGION, named)] == [
        ["other"],
        ["other", "t"],
    ]


def test_history__rollbacks__stop_after_steps_commits() -> None:
    history = ImageHistory()
    for v in range(STEPS + 5):
        history(_commit("t", f"k{v}", None, v))
    assert len(list(history.rollbacks(ACCOUNT, REGION, Scope(table="t")))) == STEPS


def test_history__rollbacks__never_reach_back_past_an_image_the_per_item_bound_dropped() -> None:
    """A view is exact or not given: once "hot" lost its oldest image, a table view older than that
    image would show "hot" as it was later, so the views stop above it; a scope that does not read
    "hot" keeps its older views."""
    history = ImageHistory(per_item=2)
    history(_commit("t", "cold", None, 1))  # commit 1
    for v in range(1, 4):  # commits 2, 3, 4: "hot"'s first change (commit 2) is dropped
        history(_commit("t", "hot", v - 1 if v > 1 else None, v))
    views = list(history.rollbacks(ACCOUNT, REGION, Scope(table="t")))
    assert [[c.key["PK"]["S"] for c in undo] for undo in views] == [["hot"], ["hot", "hot"]]
    cold = Scope(items=frozenset({("t", key_text({"PK": {"S": "cold"}}))}))
    assert len(list(history.rollbacks(ACCOUNT, REGION, cold))) == 1  # an item without a floor keeps its own
    cold_partition = Scope(table="t", test=lambda change: change.key["PK"]["S"] == "cold")
    assert len(list(history.rollbacks(ACCOUNT, REGION, cold_partition))) == 1  # "hot"'s loss is not read there
    assert history.latest(ACCOUNT, REGION, "t", key_text({"PK": {"S": "hot"}}), 2) is not None
    assert history.latest(ACCOUNT, REGION, "t", key_text({"PK": {"S": "hot"}}), 3) is None


def test_history__transactions__newest_first_only_items_whose_latest_write_is_theirs() -> None:
    history = ImageHistory()

    def change(pk: str, v: int) -> Change:
        return Change("t", {"PK": {"S": pk}}, None, {"PK": {"S": pk}, "v": {"N": str(v)}})

    history(Commit(ACCOUNT, REGION, "TransactWriteItems", (change("m1", 1), change("u1", 1))))
    history(Commit(ACCOUNT, REGION, "TransactWriteItems", (change("m2", 1), change("u2", 1), change("x", 1))))
    history(Commit(ACCOUNT, REGION, "PutItem", (change("x", 2),)))  # x's latest write is not the transaction's
    found = [
        ([c.key["PK"]["S"] for c in changes], made)
        for changes, made in history.transactions(ACCOUNT, REGION, Scope(table="t"))
    ]
    assert found == [(["m2", "u2"], 3), (["m1", "u1"], 2)]


def test_history__floors__bounded_by_what_is_kept() -> None:
    """The floors the per-item bound leaves go with their items: 20,000 writes keep a bounded few."""
    history = ImageHistory(per_item=2, changes=100)
    for v in range(20_000):
        history(_commit(f"t{v % 7}", f"k{v % 300}", None, v))
    assert len(history) <= 100 and history.floors() <= 100


def test_history__forget__drops_an_account_and_regions_changes_only() -> None:
    history = ImageHistory()
    history(_commit("t", "a", None, 1))
    history(Commit(ACCOUNT, "eu-west-1", "PutItem", (Change("t", {"PK": {"S": "a"}}, None, {"PK": {"S": "a"}}),)))
    history.forget(ACCOUNT, REGION)
    assert len(history) == 1 and list(history.rollbacks(ACCOUNT, "eu-west-1", Scope(table="t")))
    history(_commit("t", "a", None, 1))  # and keeps going after
    assert len(history) == 2


# memory, measured in a fresh process ------------------------------------------------------------

#: After the prelude (tests/endpoint/memory_probe.py): N updates of one item, a stale read every tenth.
MEMORY = r"""
assert engine.history is not None
def update(n):
    pk = "one"
    call("UpdateItem", {"TableName": "mem", "Key": {"PK": {"S": pk}}, "UpdateExpression": "SET n = :n, padding = :pad",
                        "ExpressionAttributeValues": {":n": {"N": str(n)}, ":pad": {"S": "x" * 200}}})
    if n % 10 == 0:
        call("GetItem", {"TableName": "mem", "Key": {"PK": {"S": pk}}}, weak="stale-read")
for n in range(2000):  # warm up: caches, interned strings, allocator arenas
    update(n)
before = rss()
for n in range(2000, 2000 + int(os.environ["N"])):
    update(n)
print(json.dumps({"growth": rss() - before, "kept": len(engine.history), "bytes": engine.history.bytes}))
"""


def _measured(n: int) -> dict[str, int]:
    found: dict[str, int] = json.loads(measure_memory(MEMORY, N=str(n)))
    return found


@pytest.mark.slow
def test_memory__20000_updates_of_one_item_with_the_history_on__grow_rss_by_under_5_mb() -> None:
    """The issue's bound: with stale reads asked for along the way, the history keeps a few images of the item."""
    found = _measured(20_000)
    assert found["kept"] <= ImageHistory().per_item
    assert found["growth"] < 5 * 1024 * 1024, f"RSS grew by {found['growth'] / 1e6:.1f} MB"


#: After the prelude: N updates as TransactWriteItems of two items over 500 keys; every tenth, a
#: GetItem two writes behind, a BatchGetItem missing one key's latest write, a torn BatchGetItem.
MEMORY_VIEWS = r"""
def key(k):
    return {"PK": {"S": f"k{k}"}}
def update(n):
    a, b = n % 500, (n * 7 + 1) % 500
    if a == b:
        b = (b + 1) % 500
    put = lambda k: {"Put": {"TableName": "mem", "Item": {**key(k), "n": {"N": str(n)}, "pad": {"S": "x" * 200}}}}
    call("TransactWriteItems", {"TransactItems": [put(a), put(b)]})
    if n % 10 == 0:
        call("GetItem", {"TableName": "mem", "Key": key(a)}, weak="stale-read; behind=2")
        both = {"RequestItems": {"mem": {"Keys": [key(a), key(b)]}}}
        call("BatchGetItem", both, weak="stale-read; misses=" + json.dumps(key(b), separators=(",", ":")))
        call("BatchGetItem", both, weak="torn-read")
for n in range(1000):
    update(n)
before = rss()
for n in range(1000, 1000 + int(os.environ["N"]) // 2):  # two updates per transaction
    update(n)
history = engine.history
print(json.dumps({"growth": rss() - before, "kept": len(history), "floors": history.floors()}))
"""


@pytest.mark.slow
def test_memory__20000_updates_in_transactions_with_named_and_torn_views__rss_within_10_mb() -> None:
    """Issue 37's bound: stale views named (behind, misses) and torn reads along the way keep the
    history bounded (at most four images per item, a floor per item and table) and RSS flat."""
    found = json.loads(measure_memory(MEMORY_VIEWS, N="20000"))
    assert found["kept"] <= 500 * ImageHistory().per_item and found["floors"] <= 500
    assert found["growth"] < 10 * 1024 * 1024, f"RSS grew by {found['growth'] / 1e6:.1f} MB"


# a stale view is not a write ---------------------------------------------------------------------


def _weak_client(url: str) -> Any:
    client = raw_client(url)

    def add(request: Any, **_: Any) -> None:
        request.headers[WEAK_ANSWER_HEADER] = "stale-read"

    client.meta.events.register("before-sign.dynamodb.*", add)
    return client


def test_stale_read__with_a_data_directory__writes_nothing_there_and_a_restart_has_the_fresh_items(
    tmp_path: Path,
) -> None:
    with start_endpoint(data=tmp_path) as endpoint:
        client, stale = raw_client(endpoint.url), _weak_client(endpoint.url)
        table = make_table(client, gsi=True)
        for v in (1, 2):
            client.put_item(TableName=table, Item={**key("k"), "v": {"N": str(v)}, "email": {"S": f"{v}@x"}})
        logged = (tmp_path / durable.LOG).stat().st_size
        assert stale.get_item(TableName=table, Key=key("k"))["Item"]["v"] == {"N": "1"}
        stale.scan(TableName=table)
        stale.query(
            TableName=table,
            IndexName="email-index",
            KeyConditionExpression="email = :e",
            ExpressionAttributeValues={":e": {"S": "2@x"}},
        )
        assert (tmp_path / durable.LOG).stat().st_size == logged
    with start_endpoint(data=tmp_path) as endpoint:
        client = raw_client(endpoint.url)
        items = client.scan(TableName=table, ConsistentRead=True)["Items"]
        assert [(i["v"], i["email"]) for i in items] == [({"N": "2"}, {"S": "2@x"})]


def _send(engine: DynamoEngine, operation: str, params: dict[str, Any], weak: str | None = None) -> Any:
    headers = engine_headers(operation)
    if weak is not None:
        headers[ECHO] = weak
    status, answer_headers, body = engine.handle(headers, json.dumps(params).encode())
    assert status == 200, body
    found = json.loads(body)
    found.pop("ConsumedCapacity", None)
    return found, answer_headers.get(ECHO)


TABLE = "history-under-test"
_writes = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "delete", "update"]),
        st.sampled_from(["a", "b"]),
        st.sampled_from(["1", "2", "3"]),
        st.sampled_from(["x", "y", None]),
    ),
    min_size=1,
    max_size=25,
)


def _apply(engine: DynamoEngine, write: tuple[str, str, str, str | None], n: int) -> None:
    kind, pk, sk, g = write
    item_key = {"PK": {"S": pk}, "SK": {"S": sk}}
    if kind == "put":
        item = {**item_key, "n": {"N": str(n)}, **({"G": {"S": g}} if g else {})}
        _send(engine, "PutItem", {"TableName": TABLE, "Item": item})
    elif kind == "delete":
        _send(engine, "DeleteItem", {"TableName": TABLE, "Key": item_key})
    elif g is None:
        _send(engine, "UpdateItem", {"TableName": TABLE, "Key": item_key, "UpdateExpression": "REMOVE G"})
    else:
        _send(
            engine,
            "UpdateItem",
            {
                "TableName": TABLE,
                "Key": item_key,
                "UpdateExpression": "SET G = :g, n = :n",
                "ExpressionAttributeValues": {":g": {"S": g}, ":n": {"N": str(n)}},
            },
        )


def _reads() -> list[dict[str, Any]]:
    reads: list[dict[str, Any]] = [{"TableName": TABLE}]
    for pk in ("a", "b"):
        reads.append(
            {"TableName": TABLE, "KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": pk}}}
        )
    for g in ("x", "y"):
        reads.append(
            {
                "TableName": TABLE,
                "IndexName": "by-g",
                "KeyConditionExpression": "G = :g",
                "ExpressionAttributeValues": {":g": {"S": g}},
            }
        )
    return reads


@settings(FUZZ, max_examples=max(FUZZ.max_examples // 5, 25))  # ~60 requests an example
@given(writes=_writes)
def test_stale_read__generated_writes__answers_one_the_store_had_and_leaves_the_index_exact(
    writes: list[tuple[str, str, str, str | None]],
) -> None:
    """After generated puts, deletes and index-key updates, each stale Scan, Query and GSI Query answers as
    the store answered after some earlier write (the answers recorded along the way are the oracle): the one
    before the latest write when that write changed the answer. After every stale read, the index answers
    each read exactly as moto's walk of the table does (``store.indexed = False``)."""
    engine = _table_engine()
    reads = _reads()
    operation = ["Scan"] + ["Query"] * (len(reads) - 1)
    history: list[list[Any]] = [[_send(engine, op, r)[0] for op, r in zip(operation, reads, strict=True)]]
    for n, write in enumerate(writes):
        _apply(engine, write, n)
        history.append([_send(engine, op, r)[0] for op, r in zip(operation, reads, strict=True)])
    now = history[-1]
    for i, (op, read) in enumerate(zip(operation, reads, strict=True)):
        stale, echo = _send(engine, op, read, weak="stale-read")
        seen = [answers[i] for answers in history]
        assert stale in seen, (read, stale)
        if echo == "stale-read":
            assert stale != now[i]
        else:
            assert stale == now[i] and echo is not None and echo.startswith("none; ")
        if seen[-2] != now[i]:
            assert stale == seen[-2], (read, stale, seen[-2])
        for op2, read2 in zip(operation, reads, strict=True):  # the view came back whole
            engine.store.indexed = False
            oracle = _send(engine, op2, read2)
            engine.store.indexed = True
            assert _send(engine, op2, read2) == oracle
        assert _send(engine, op, read)[0] == now[i]


def _table_engine() -> DynamoEngine:
    """An engine giving weak answers, with the table under test (PK, SK; GSI by-g on G)."""
    engine = DynamoEngine(weak_answers=True)
    _send(
        engine,
        "CreateTable",
        {
            "TableName": TABLE,
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK", "G")],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
    )
    return engine


def _changed(state: dict[tuple[str, str], str | None], write: tuple[str, str, str, str | None]) -> Any:
    """The model's (G before, G after) of one write, None when it changed nothing (a delete of an absent item);
    ``state`` maps a present item's key to its G (None: no G). "absent" stands for no item."""
    kind, pk, sk, g = write
    key = (pk, sk)
    before = state.get(key, "absent")
    if kind == "delete":
        state.pop(key, None)
        return None if before == "absent" else (before, "absent")
    after = g if kind == "put" or g is not None else None
    state[key] = after
    return (before, after)


@settings(FUZZ, max_examples=max(FUZZ.max_examples // 5, 25))
@given(writes=_writes)
def test_stale_read_behind__generated_writes__each_view_is_the_answer_before_the_nth_latest_write_it_reads(
    writes: list[tuple[str, str, str, str | None]],
) -> None:
    """``behind=N`` is exact: a table partition's Query, a GSI partition's Query and a Scan answer as the store
    answered before the N-th latest write they read (a model of the writes says which those are); given
    whenever the history keeps it (no item lost an image), ``none`` only past what it keeps. And
    ``index-misses=KEY`` answers a GSI Query as a store that never got that item's latest write does."""
    engine = _table_engine()
    reads = _reads()
    operation = ["Scan"] + ["Query"] * (len(reads) - 1)
    # which reads each write touches: the Scan; partition a, b; index partition x, y
    scopes: list[Callable[[tuple[str, str, str, str | None], tuple[Any, Any]], bool]] = [
        lambda w, c: True,
        lambda w, c: w[1] == "a",
        lambda w, c: w[1] == "b",
        lambda w, c: "x" in c,
        lambda w, c: "y" in c,
    ]
    history: list[list[Any]] = [[_send(engine, op, r)[0] for op, r in zip(operation, reads, strict=True)]]
    state: dict[tuple[str, str], str | None] = {}
    touched: list[list[int]] = [[] for _ in reads]  # per read, the indexes of the writes it reads
    per_item: dict[tuple[str, str], int] = {}
    for n, write in enumerate(writes):
        changed = _changed(state, write)
        _apply(engine, write, n)
        history.append([_send(engine, op, r)[0] for op, r in zip(operation, reads, strict=True)])
        if changed is not None:
            per_item[write[1:3]] = per_item.get(write[1:3], 0) + 1
            for i, test in enumerate(scopes):
                if test(write, changed):
                    touched[i].append(n)
    lost = any(count > ImageHistory().per_item for count in per_item.values())
    for i, (op, read) in enumerate(zip(operation, reads, strict=True)):
        for behind in range(1, min(len(touched[i]), STEPS) + 2):
            form = f"stale-read; behind={behind}"
            answer, echo = _send(engine, op, read, weak=form)
            if echo == form:
                assert answer == history[touched[i][-behind]][i], (read, behind)
            else:
                assert echo is not None and echo.startswith("none; ")
                assert behind > len(touched[i]) or lost, (read, behind, echo)
        assert _send(engine, op, read)[0] == history[-1][i]  # the views came back whole
    last_write = {w[1:3]: n for n, w in enumerate(writes) if _touches(writes[: n + 1])}
    for (pk, sk), n in last_write.items():  # index-misses: as if that write had not reached the index
        reference = _table_engine()
        for m, write in enumerate(writes):
            if m < n or write[1:3] != (pk, sk):  # the item's later writes changed nothing: left out too
                _apply(reference, write, m)
        form = f"stale-read; index-misses={key_name({'PK': {'S': pk}, 'SK': {'S': sk}})}"
        for read in reads[3:]:
            answer, echo = _send(engine, "Query", read, weak=form)
            if echo == form:
                assert _sorted(answer) == _sorted(_send(reference, "Query", read)[0]), (read, pk, sk)
            else:
                assert lost and echo is not None and echo.startswith("none; ")


def _touches(writes: list[tuple[str, str, str, str | None]]) -> bool:
    """Did the last of ``writes`` change its item (a delete of an absent item does not)?"""
    state: dict[tuple[str, str], str | None] = {}
    changed = None
    for write in writes:
        changed = _changed(state, write)
    return changed is not None


def _sorted(answer: dict[str, Any]) -> list[Any]:
    return sorted(json.dumps(item, sort_keys=True) for item in answer["Items"])


_transactions = st.lists(
    st.tuples(
        st.booleans(),  # a TransactWriteItems (else a PutItem of its first item)
        st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True),
        st.sampled_from(["put", "delete"]),
    ),
    min_size=1,
    max_size=8,
)


def _write_all(engine: DynamoEngine, step: tuple[bool, list[str], str], n: int, skip: frozenset[str]) -> None:
    """One generated step: a TransactWriteItems of puts or deletes of its items (``skip``: left out), or a PutItem."""
    transact, items, kind = step

    def action(pk: str) -> dict[str, Any]:
        key = {"PK": {"S": pk}, "SK": {"S": "1"}}
        if kind == "delete":
            return {"Delete": {"TableName": TABLE, "Key": key}}
        return {"Put": {"TableName": TABLE, "Item": {**key, "n": {"N": str(n)}}}}

    if not transact:
        if items[0] not in skip:
            _send(engine, "PutItem", {"TableName": TABLE, "Item": {"PK": {"S": items[0]}, "SK": {"S": "1"}}})
        return
    actions = [action(pk) for pk in items if pk not in skip]
    if actions:
        _send(engine, "TransactWriteItems", {"TransactItems": actions})


@settings(FUZZ, max_examples=max(FUZZ.max_examples // 5, 25))
@given(steps=_transactions)
def test_torn_read__generated_transactions__each_named_subset_is_the_store_without_those_writes(
    steps: list[tuple[bool, list[str], str]],
) -> None:
    """``torn-read; misses=KEY, ...`` on a Scan answers as a store that got every write but the named items'
    writes of the latest transaction that wrote them all (a reference engine replays without them); a subset
    that is every write of the transaction, or an item written again after it, gives ``none``."""
    engine = _table_engine()
    present: set[str] = set()
    changed: list[set[str]] = []  # per step, the items it changed (a delete of an absent item changes nothing)
    for n, step in enumerate(steps):
        _write_all(engine, step, n, frozenset())
        transact, items, kind = step
        items = items if transact else items[:1]
        changed.append({pk for pk in items if kind == "put" or not transact or pk in present})
        if transact and kind == "delete":
            present -= set(items)
        else:
            present |= set(items)
    last = {pk: n for n, items in enumerate(changed) for pk in items}  # each item's latest write
    for size in (1, 2, 3):
        for subset in itertools.combinations("abcd", size):
            names = ", ".join(key_name({"PK": {"S": pk}, "SK": {"S": "1"}}) for pk in subset)
            form = f"torn-read; misses={names}"
            answer, echo = _send(engine, "Scan", {"TableName": TABLE}, weak=form)
            writers = {last.get(pk) for pk in subset}
            writer = writers.pop() if len(writers) == 1 else None
            if writer is None or not steps[writer][0] or size == len(changed[writer]):
                assert echo is not None and echo.startswith("none; "), (subset, echo)
                continue
            reference = _table_engine()
            for m, step in enumerate(steps):
                # from that transaction on, the subset's writes are left out (later ones changed nothing)
                _write_all(reference, step, m, frozenset(subset) if m >= writer else frozenset())
            assert echo == form
            assert _sorted(answer) == _sorted(_send(reference, "Scan", {"TableName": TABLE})[0]), subset
