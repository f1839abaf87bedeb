"""Race tests with no invariant (issue 39): explore names the anomaly from the history alone.

Each lesson's broken version is found with no invariant, naming the anomaly and its calls (a
read-modify-write of the flags: a lost update; the check-then-write sign-up: a duplicate; a plain
``ADD`` whose answer was lost: applied twice; a batch that ignores UnprocessedItems: dropped; a
count of one page: a page taken as the whole), and its fixed version reports none under the same
exploration. The history's new columns (``found``, ``more``, ``left``) are what the anomalies read.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from labkit.patterns.singleton import FlagStore, unsafe_set_flags
from labkit.patterns.uniqueness import register, register_check_then_write
from labkit.races import ANOMALIES, Interleaving, explore, run_interleaving
from labkit.races.anomalies import find
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError, ValueTaken
from labkit.shared.table import reset_table
from recipes.sharded_counter import add_once, shard_key
from tests.helpers import resource_table
from tests.races.increments import naive_increment, put_counter, read_counter, safe_increment

RETRYING = {"mode": "standard", "total_max_attempts": 3}  # botocore resends a lost answer, as a service's client does


def two_increments(conn: Connection, make: Callable[[str], Callable[[Any], int]], **options: Any) -> Any:
    actor = make(conn.table_name)
    return explore({"A": actor, "B": actor}, conn=conn, setup=lambda: put_counter(conn), **options)


# ---------------------------------------------------------------- explore with no invariant


def test_explore__no_invariant_read_modify_write__lost_update_named_with_its_calls(tconn: Connection) -> None:
    """GetItem then PutItem n+1: fails with no invariant; the message names the read, the other write and the Put."""
    result = two_increments(tconn, naive_increment)
    assert not result.passed and result.counterexample == "A B B A", result.summary()
    assert result.message == (
        "lost update: A read COUNTER/C (A1 GetItem), B wrote it (B2 PutItem), A wrote it unconditionally "
        "(A2 PutItem), from what it read before B's write"
    ), result.message
    assert [a.kind for a in result.anomalies][:1] == ["lost-update"] and result.anomalies[0].calls == ("A1", "B2", "A2")
    put_counter(tconn)
    actor = naive_increment(tconn.table_name)
    run_interleaving({"A": actor, "B": actor}, result.counterexample, conn=tconn)
    assert read_counter(tconn) == 1  # the replay: two increments, one counted


def test_explore__no_invariant_guarded_increment__passes_no_anomaly(tconn: Connection) -> None:
    """The conditional increment that re-reads on ConditionalCheckFailed: every order passes, nothing named."""
    result = two_increments(tconn, safe_increment)
    assert result.passed and result.anomalies == (), result.summary()


def test_explore__allow_lost_update__the_read_modify_write_passes(tconn: Connection) -> None:
    """allow=["lost-update"]: code that means to overwrite passes; nothing is reported."""
    result = two_increments(tconn, naive_increment, allow=["lost-update"])
    assert result.passed and result.anomalies == (), result.summary()


@pytest.mark.parametrize("allow", [["lost-updates"], "lost-update", [1]])
def test_explore__allow_unknown_name__validation_error_naming_the_anomalies_nothing_run(
    tconn: Connection, allow: Any
) -> None:
    """An unknown anomaly name (or a bare string) is refused before any call, listing the names."""
    ran: list[str] = []

    def actor(client: Any) -> None:
        ran.append("x")

    with pytest.raises(ValidationError, match="anomal") as info:
        explore({"A": actor, "B": actor}, conn=tconn, setup=None, allow=allow)
    assert ran == []
    if isinstance(allow, list) and allow[0] == "lost-updates":
        assert all(name in str(info.value) for name in ANOMALIES)


def test_explore__invariant_given__it_decides__the_anomaly_reported_beside(tconn: Connection) -> None:
    """An invariant that passes the lost update still passes; ``.anomalies`` and summary() name the lost update."""
    result = two_increments(tconn, naive_increment, invariant=lambda res: read_counter(tconn) >= 1)
    assert result.passed, result.summary()
    assert [a.kind for a in result.anomalies] == ["lost-update"]
    assert "anomaly in 'A B A B': lost update: " in result.summary(), result.summary()


def test_explore__invariant_fails__its_message_decides__anomalies_beside(tconn: Connection) -> None:
    """A failing invariant keeps its own message; the lost update is beside it, and in the replay file's data."""

    def both_land(res: Interleaving) -> None:
        assert read_counter(tconn) == 2, f"counter {read_counter(tconn)}"

    result = two_increments(tconn, naive_increment, invariant=both_land)
    assert not result.passed and (result.message or "").startswith("counter 1"), result.summary()
    assert [a.kind for a in result.anomalies] == ["lost-update"]
    assert result.replay_data()["anomalies"][0]["kind"] == "lost-update"


# ---------------------------------------------------------------- the history's new columns


def test_history__found_more_left__from_each_answer(tconn: Connection) -> None:
    """found: a GetItem's Item, a Query's Count; more: its LastEvaluatedKey; left: UnprocessedItems' count."""
    table = tconn.table_name
    rows = [{"PK": {"S": "P"}, "SK": {"S": f"R{i}"}} for i in range(3)]

    def actor(client: Any) -> None:
        client.get_item(TableName=table, Key=rows[0])
        client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": r}} for r in rows]})
        client.get_item(TableName=table, Key=rows[0])
        client.query(TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": {"S": "P"}})

    res = run_interleaving({"A": actor}, "A A A A", conn=tconn, faults=["A2: unprocessed-items", "A4: short-page"])
    got = [(r["operation"], r["found"], r["more"], r["left"]) for r in res.records]
    assert got == [
        ("GetItem", False, False, 0),
        ("BatchWriteItem", None, False, 1),
        ("GetItem", True, False, 0),
        ("Query", True, True, 0),
    ], got


# ---------------------------------------------------------------- the lessons' broken and fixed versions


def flag_admins(conn: Connection, write: Callable[..., Any]) -> Any:
    """Lesson 01: two admins each change one flag of the settings item with ``write``."""
    store = FlagStore.connect(conn)

    def fresh_item() -> None:
        conn.client.delete_item(TableName=conn.table_name, Key=store.key)
        store.create()

    actors = {
        "A": lambda client: write(store.with_client(client), signup_enabled=True),
        "B": lambda client: write(store.with_client(client), maintenance_mode=False),
    }
    return explore(actors, conn=conn, setup=fresh_item)


def test_lesson_01__read_modify_write_flags__lost_update_found_without_an_invariant(tconn: Connection) -> None:
    """unsafe_set_flags (GetItem, PutItem the whole item back): a lost update, named."""
    result = flag_admins(tconn, unsafe_set_flags)
    assert not result.passed and (result.message or "").startswith("lost update: "), result.summary()
    assert "wrote it unconditionally" in (result.message or "") and "PutItem" in (result.message or "")


def test_lesson_01__version_guarded_set_flags__no_anomaly(tconn: Connection) -> None:
    """FlagStore.set_flags (UpdateItem guarded by the version, re-read on a refusal): every order, none named."""
    result = flag_admins(tconn, FlagStore.set_flags)
    assert result.passed and result.anomalies == (), result.summary()


def two_sign_ups(conn: Connection, sign_up: Callable[[Any, str, str], Any], **options: Any) -> Any:
    """Lesson 02: ada and countess sign up with the same email at once."""

    def actor(name: str) -> Callable[[Any], Any]:
        def go(client: Any) -> Any:
            try:
                return sign_up(client, name, f"{name}-id")
            except ValueTaken as exc:
                return str(exc)

        return go

    return explore({"A": actor("ada"), "B": actor("countess")}, conn=conn, setup=lambda: reset_table(conn), **options)


def test_lesson_02__check_then_write_sign_up__duplicate_found_without_an_invariant(tconn: Connection) -> None:
    """register_check_then_write (Scan for the email, then PutItem): a check-then-write duplicate, named."""

    def check_then_write(client: Any, username: str, account_id: str) -> Any:
        return register_check_then_write(
            client, tconn.table_name, email="ada@lovelace.io", username=username, read="scan", account_id=account_id
        )

    result = two_sign_ups(tconn, check_then_write)
    assert not result.passed, result.summary()
    message = result.message or ""
    assert message.startswith("check-then-write duplicate: ") and "email = ada@lovelace.io" in message, message
    assert result.anomalies[0].calls == ("A1", "B2", "A2") or result.anomalies[0].calls == ("B1", "A2", "B2")


def test_lesson_02__check_then_write_on_the_index__duplicate_found(tconn: Connection) -> None:
    """The same with the GSI read (Query by email, Select COUNT): the duplicate is named from the index read."""

    def check_then_write(client: Any, username: str, account_id: str) -> Any:
        return register_check_then_write(
            client, tconn.table_name, email="ada@lovelace.io", username=username, account_id=account_id
        )

    result = two_sign_ups(tconn, check_then_write)
    assert not result.passed and (result.message or "").startswith("check-then-write duplicate: "), result.summary()


def test_lesson_02__marker_transaction__no_anomaly(tconn: Connection) -> None:
    """register (the account and its markers in one TransactWriteItems): every order, none named."""

    def with_markers(client: Any, username: str, account_id: str) -> Any:
        return register(client, tconn.table_name, email="ada@lovelace.io", username=username, account_id=account_id)

    result = two_sign_ups(tconn, with_markers)
    assert result.passed and result.anomalies == (), result.summary()


def one_view(conn: Connection, view: Callable[[], Any]) -> Any:
    """Lesson 03: one view counted, its answer lost at each call point."""

    def setup() -> None:
        for shard in range(4):
            conn.client.delete_item(TableName=conn.table_name, Key=shard_key("views", shard))

    return explore({"A": view}, conn=conn, setup=setup, faults=["lose-response"])


def test_lesson_03__plain_add_after_a_lost_answer__applied_twice_found(tconn: Connection) -> None:
    """ADD n :one on a retrying client, its answer lost: botocore's resend counts it twice — named."""
    sdk = tconn.new_client(retries=RETRYING)

    def plain_add() -> Any:
        return sdk.update_item(
            TableName=tconn.table_name,
            Key=shard_key("views", 0),
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    result = one_view(tconn, plain_add)
    assert not result.passed and result.faults == ("A1: lose-response",), result.summary()
    assert (result.message or "").startswith("applied twice: A1 UpdateItem on COUNTER#views#0/SHARD"), result.message


def test_lesson_03__add_once_with_its_token__no_anomaly(tconn: Connection) -> None:
    """add_once (a TransactWriteItems with the caller's token) on a client without retries: none named."""
    bare = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    token = str(uuid.uuid4())
    result = one_view(tconn, lambda: add_once(bare, tconn.table_name, "views", 4, token=token))
    assert result.passed and result.anomalies == (), result.summary()


def test_applied_twice__the_actor_resends_a_plain_add__found(tconn: Connection) -> None:
    """No botocore retries: the actor's own loop sends the ADD again after the lost answer — named, both calls."""
    bare = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})

    def add_and_retry() -> None:
        request: dict[str, Any] = {
            "TableName": tconn.table_name,
            "Key": shard_key("views", 0),
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
        for _ in range(2):
            try:
                bare.update_item(**request)
                return
            except Exception:  # noqa: BLE001  # the lost answer: try again
                continue

    result = one_view(tconn, add_and_retry)
    assert not result.passed and result.anomalies[0].calls == ("A1", "A2"), result.summary()


ROWS = [{"PK": {"S": "IMPORT"}, "SK": {"S": f"ROW#{i}"}} for i in range(3)]


def an_import(conn: Connection, import_rows: Callable[..., Any]) -> Any:
    def setup() -> None:
        for row in ROWS:
            conn.client.delete_item(TableName=conn.table_name, Key=row)

    return explore({"A": import_rows}, conn=conn, setup=setup, faults=["unprocessed-items"])


def test_dropped_batch_items__unprocessed_items_ignored__found(tconn: Connection) -> None:
    """One BatchWriteItem whose UnprocessedItems are never looked at: dropped batch items, named."""

    def import_raw(client: Any) -> None:
        client.batch_write_item(RequestItems={tconn.table_name: [{"PutRequest": {"Item": r}} for r in ROWS]})

    result = an_import(tconn, import_raw)
    assert not result.passed and result.faults == ("A1: unprocessed-items",), result.summary()
    assert result.message == (
        "dropped batch items: A1 BatchWriteItem came back with 1 request(s) in UnprocessedItems, "
        "and A never sent them again"
    ), result.message


def test_dropped_batch_items__batch_writer__no_anomaly(tconn: Connection) -> None:
    """boto3's batch_writer sends the unprocessed items again: none named."""
    table = resource_table(tconn)

    def import_batch_writer() -> None:
        with table.batch_writer() as batch:
            for row in ROWS:
                batch.put_item(Item={k: v["S"] for k, v in row.items()})

    result = an_import(tconn, import_batch_writer)
    assert result.passed and result.anomalies == () and result.scenarios == 2, result.summary()


def a_count(conn: Connection, count: Callable[[Any], int]) -> Any:
    def setup() -> None:
        for i in range(3):
            conn.client.put_item(TableName=conn.table_name, Item={"PK": {"S": "CUST#1"}, "SK": {"S": f"O#{i}"}})

    return explore({"A": count}, conn=conn, setup=setup, faults=["short-page"])


QUERY = {"KeyConditionExpression": "PK = :c", "ExpressionAttributeValues": {":c": {"S": "CUST#1"}}}


def test_page_taken_as_the_whole__one_page_count__found(tconn: Connection) -> None:
    """A count of the first page (short-page: a LastEvaluatedKey): named, with no invariant."""
    result = a_count(tconn, lambda c: int(c.query(TableName=tconn.table_name, **QUERY)["Count"]))
    assert not result.passed and result.faults == ("A1: short-page",), result.summary()
    assert (result.message or "").startswith("page taken as the whole: A1 Query of "), result.message


def test_page_taken_as_the_whole__paginator__no_anomaly(tconn: Connection) -> None:
    """The paginator asks for the next page (ExclusiveStartKey): none named."""

    def count_paginated(client: Any) -> int:
        pages = client.get_paginator("query").paginate(TableName=tconn.table_name, **QUERY)
        return sum(int(page["Count"]) for page in pages)

    result = a_count(tconn, count_paginated)
    assert result.passed and result.anomalies == (), result.summary()


def test_page_taken_as_the_whole__limit_asked_for__not_named(tconn: Connection) -> None:
    """A Query with Limit=1 asks for one page: its LastEvaluatedKey is what it asked for, not an anomaly."""
    result = a_count(tconn, lambda c: int(c.query(TableName=tconn.table_name, Limit=1, **QUERY)["Count"]))
    assert result.passed and result.anomalies == (), result.summary()


def test_client_error_in_the_actor__its_batch_not_named(tconn: Connection) -> None:
    """An actor whose run ends in a DynamoDB error reported its failure: its dropped batch is not named."""

    def import_then_fail(client: Any) -> None:
        client.batch_write_item(RequestItems={tconn.table_name: [{"PutRequest": {"Item": r}} for r in ROWS]})
        client.get_item(TableName="labkit-no-such-table", Key=ROWS[0])

    result = an_import(tconn, import_then_fail)
    assert result.passed and result.anomalies == (), result.summary()


# ---------------------------------------------------------------- the definitions, on hand-made histories


def schema(region: str | None, table: str) -> tuple[str, str]:
    return ("PK", "SK")


def row(actor: str, seq: int, turn: int, operation: str, params: dict[str, Any], **answer: Any) -> dict[str, Any]:
    """A history row as the gate records it (``outcome`` ok unless given)."""
    base = {"actor": actor, "seq": seq, "turn": turn, "operation": operation, "params": params, "region": None}
    return base | {"outcome": "ok", "found": None, "more": False, "left": 0, "injected": None, "retries": 0} | answer


K = {"PK": {"S": "ACCT#1"}, "SK": {"S": "PROFILE"}}


def update(expression: str, values: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"TableName": "t", "Key": K, "UpdateExpression": expression, "ExpressionAttributeValues": values, **more}


def test_find__updates_of_different_attributes__no_lost_update() -> None:
    """A reads, B sets email, A sets name: nothing B set is overwritten; setting what B set is a lost update."""
    read = row("A", 0, 0, "GetItem", {"TableName": "t", "Key": K}, found=True)
    other = row("B", 0, 1, "UpdateItem", update("SET email = :e", {":e": {"S": "x"}}))
    mine = row(
        "A", 1, 2, "UpdateItem", update("SET #n = :n", {":n": {"S": "y"}}, ExpressionAttributeNames={"#n": "name"})
    )
    assert find([read, other, mine], schema) == []
    same = row(
        "A", 1, 2, "UpdateItem", update("SET #e = :e", {":e": {"S": "y"}}, ExpressionAttributeNames={"#e": "email"})
    )
    (found,) = find([read, other, same], schema)
    assert found.kind == "lost-update" and found.calls == ("A1", "B1", "A2") and "sets email" in found.message


def test_find__refused_write_or_computed_update__no_lost_update() -> None:
    """A's write refused by its condition, or computed by DynamoDB (SET n = n + :d): nothing lost."""
    read = row("A", 0, 0, "GetItem", {"TableName": "t", "Key": K}, found=True)
    other = row("B", 0, 1, "PutItem", {"TableName": "t", "Item": {**K, "n": {"N": "1"}}})
    refused = row("A", 1, 2, "PutItem", {"TableName": "t", "Item": K}, outcome="ConditionalCheckFailedException")
    computed = row("A", 1, 2, "UpdateItem", update("SET n = n + :d", {":d": {"N": "1"}}))
    assert find([read, other, refused], schema) == [] and find([read, other, computed], schema) == []


def test_find__lost_add_resent_by_botocore__applied_twice__a_set_add_is_not() -> None:
    """ADD of a number resent (retries=1, ok) after a lost answer: applied twice; ADD to a string set: idempotent."""
    counted = row(
        "A", 0, 0, "UpdateItem", update("ADD n :one", {":one": {"N": "1"}}), injected="lose-response", retries=1
    )
    tagged = row(
        "A", 0, 0, "UpdateItem", update("ADD tags :t", {":t": {"SS": ["x"]}}), injected="lose-response", retries=1
    )
    assert [a.kind for a in find([counted], schema)] == ["applied-twice"]
    assert find([tagged], schema) == []


def test_find__transaction_resent_with_its_token__not_applied_twice() -> None:
    """The caller's resend of a transaction with the same ClientRequestToken is answered, not applied again."""
    action = {"Update": update("ADD n :one", {":one": {"N": "1"}})}
    first = row(
        "A",
        0,
        0,
        "TransactWriteItems",
        {"TransactItems": [action], "ClientRequestToken": "t1"},
        outcome="ReadTimeoutError",
        injected="lose-response",
    )
    again = row("A", 1, 1, "TransactWriteItems", {"TransactItems": [action], "ClientRequestToken": "t1"})
    new = row("A", 1, 1, "TransactWriteItems", {"TransactItems": [action], "ClientRequestToken": "t2"})
    assert find([first, again], schema) == []
    assert [a.calls for a in find([first, new], schema)] == [("A1", "A2")]


def test_find__unprocessed_keys_asked_again__not_dropped() -> None:
    """A BatchGetItem whose UnprocessedKeys are asked for again drops nothing; never asked again, dropped."""
    keys = {"t": {"Keys": [K, {"PK": {"S": "ACCT#2"}, "SK": {"S": "PROFILE"}}]}}
    first = row("A", 0, 0, "BatchGetItem", {"RequestItems": keys}, left=1)
    again = row("A", 1, 1, "BatchGetItem", {"RequestItems": {"t": {"Keys": [K]}}})
    assert find([first, again], schema) == []
    assert [a.kind for a in find([first], schema)] == ["dropped-batch-items"]
    assert find([first], schema, failed={"A"}) == []


def test_find__check_then_write_on_an_index_value__named_with_the_value() -> None:
    """A's index Query finds no email, B puts an account with it, A puts another: a duplicate of the value."""
    query = {
        "TableName": "t",
        "IndexName": "email-index",
        "KeyConditionExpression": "email = :e",
        "ExpressionAttributeValues": {":e": {"S": "ada@x.io"}},
        "Select": "COUNT",
    }
    read = row("A", 0, 0, "Query", query, found=False)
    theirs = row(
        "B",
        1,
        1,
        "PutItem",
        {"TableName": "t", "Item": {"PK": {"S": "ACCT#b"}, "SK": {"S": "P"}, "email": {"S": "ada@x.io"}}},
    )
    mine = row(
        "A",
        1,
        2,
        "PutItem",
        {"TableName": "t", "Item": {"PK": {"S": "ACCT#a"}, "SK": {"S": "P"}, "email": {"S": "ada@x.io"}}},
    )
    (found,) = find([read, theirs, mine], schema)
    assert found.kind == "check-then-write-duplicate" and found.about == "email = ada@x.io"
    assert found.calls == ("A1", "B2", "A2")
