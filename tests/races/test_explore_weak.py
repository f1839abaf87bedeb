"""DynamoDB's weak answers in the race lab: ``stale-read``, ``unprocessed-items``, ``short-page`` (issue 26).

Each is placed only where DynamoDB can give it (the catalogue's EVENTUAL_READS, PARTIAL, PAGED and
the request's ``ConsistentRead``); forced anywhere else it stops the run at that call, which is not
sent, with one error saying where each kind applies; on a backend other than labkit's embedded
endpoint it is refused before anything runs, as endpoint faults are. Explored, a read-back after a
write is found stale (with one actor: it races with DynamoDB), a batch that ignores what comes
back unprocessed drops a write, a count of one page misses items; the counterexample names the
fault (``'A A' with A2: stale-read``), shows it in the history's ``injected`` column, and replays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import DYNAMODB_LOCAL, start_endpoint
from labkit.engine_plugins.faults import ShortPage, StaleRead, TornRead, UnprocessedItems
from labkit.engine_plugins.faults.control import control, settle_images
from labkit.engine_plugins.faults.kinds import EMBEDDED_ONLY, WEAK_ANSWERS
from labkit.races import Interleaving, explore, load, run_interleaving
from labkit.races.scenarios import EXPLORE_FAULTS, Point, can_give, check_fault_names, fault_scenarios
from labkit.shared.backend import Connection
from labkit.shared.catalogue import Op
from labkit.shared.errors import ConfigurationError, ValidationError

ORDER = {"PK": {"S": "ORDER#1"}, "SK": {"S": "ORDER"}}


def put_order(conn: Connection, table: str, status: str = "new") -> None:
    conn.client.put_item(TableName=table, Item={**ORDER, "status": {"S": status}})


def status_of(conn: Connection, table: str) -> str | None:
    item = conn.client.get_item(TableName=table, Key=ORDER, ConsistentRead=True).get("Item")
    return None if item is None else str(item["status"]["S"])


def set_status(client: Any, table: str, status: str) -> None:
    """UpdateItem the order's status (``status`` is a reserved word: named through ``#s``)."""
    client.update_item(
        TableName=table,
        Key=ORDER,
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": status}},
    )


def confirm_and_read_back(table: str, *, consistent: bool) -> Any:
    """UpdateItem the order's status, then GetItem it back to answer (the default read: eventually consistent)."""

    def actor(client: Any) -> str:
        set_status(client, table, "confirmed")
        return str(client.get_item(TableName=table, Key=ORDER, ConsistentRead=consistent)["Item"]["status"]["S"])

    return actor


# ---------------------------------------------------------------- where DynamoDB can give each


def test_fault_scenarios__weak_answers__only_where_dynamodb_can_give_them() -> None:
    """stale-read on eventually consistent reads only; unprocessed-items on batches; short-page on Query and Scan."""
    points: dict[str, list[Point]] = {
        "A": [
            ("GetItem", {"TableName": "t", "Key": {}}),
            ("GetItem", {"TableName": "t", "Key": {}, "ConsistentRead": True}),
            ("PutItem", {"TableName": "t", "Item": {}}),
            ("Query", {"TableName": "t", "IndexName": "by-email"}),
            ("Scan", {"TableName": "t", "ConsistentRead": True}),
            ("BatchGetItem", {"RequestItems": {"t": {"Keys": [], "ConsistentRead": True}}}),
            ("BatchWriteItem", {"RequestItems": {"t": []}}),
            ("TransactGetItems", {"TransactItems": []}),
        ]
    }
    scenarios = fault_scenarios(points, list(WEAK_ANSWERS))
    assert scenarios == [
        (),
        ("A1: stale-read",),
        ("A4: stale-read",),
        ("A4: short-page",),
        ("A5: short-page",),
        ("A6: unprocessed-items",),
        ("A7: unprocessed-items",),
    ]


def test_can_give__batch_get_with_one_eventually_consistent_table__stale_read_placed() -> None:
    """ConsistentRead is per table in a BatchGetItem: one table read eventually is enough for a stale answer."""
    both = {"RequestItems": {"a": {"Keys": [], "ConsistentRead": True}, "b": {"Keys": []}}}
    assert can_give("stale-read", "BatchGetItem", both)
    assert not can_give("stale-read", "BatchGetItem", {"RequestItems": {"a": {"Keys": [], "ConsistentRead": True}}})
    assert not can_give("stale-read", "ExecuteStatement", {"Statement": "SELECT * FROM t"})
    assert not can_give("short-page", "ExecuteStatement", {"Statement": "SELECT * FROM t"})


def test_check_fault_names__all__every_kind_and_the_weak_answers_only_on_the_embedded_endpoint() -> None:
    """faults='all' is every kind explore places; off the embedded endpoint, every kind but the weak answers and
    ttl-delete (EMBEDDED_ONLY)."""
    assert check_fault_names("all") == EXPLORE_FAULTS
    assert set(WEAK_ANSWERS) <= set(EXPLORE_FAULTS)
    assert set(EMBEDDED_ONLY) == {*WEAK_ANSWERS, "ttl-delete"} <= set(EXPLORE_FAULTS)
    assert check_fault_names("all", embedded=False) == tuple(f for f in EXPLORE_FAULTS if f not in EMBEDDED_ONLY)
    with pytest.raises(ValidationError, match="or 'all'"):
        check_fault_names("stale-read")


def test_refusal__each_kind__says_what_it_meets() -> None:
    """The fault classes name their labels and refuse the calls DynamoDB never answers that way."""
    assert [StaleRead().label, UnprocessedItems().label, ShortPage().label, TornRead().label] == list(WEAK_ANSWERS)
    assert StaleRead().refusal("GetItem", {"ConsistentRead": True}) is not None
    assert TornRead().refusal("GetItem", {}) is not None  # serializable: never torn
    assert TornRead().refusal("Scan", {"ConsistentRead": True}) is None  # read-committed, whatever ConsistentRead
    assert StaleRead().refusal("TransactGetItems", {}) is not None
    assert UnprocessedItems().refusal("PutItem", {}) is not None
    assert ShortPage().refusal("GetItem", {}) is not None
    assert ShortPage().refusal("Scan", {}) is None


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("fault", "call", "where"),
    [
        ("A1: stale-read", "get_consistent", "ConsistentRead=True"),
        ("A1: unprocessed-items", "put", "PutItem"),
        ("A1: short-page", "get", "GetItem"),
    ],
)
def test_run_interleaving__weak_answer_on_the_wrong_call__one_clear_error__the_call_not_sent(
    tconn: Connection, table: str, fault: str, call: str, where: str
) -> None:
    """Forced where DynamoDB cannot give it: a ValidationError saying where each kind applies; nothing sent."""
    sent: list[str] = []

    def actor(client: Any) -> None:
        sent.append(call)
        if call == "put":
            client.put_item(TableName=table, Item={**ORDER, "status": {"S": "written"}})
        else:
            client.get_item(TableName=table, Key=ORDER, ConsistentRead=call == "get_consistent")

    with pytest.raises(ValidationError) as info:
        run_interleaving({"A": actor}, "A", conn=tconn, faults=[fault])
    message = str(info.value)
    assert where in message and "Nothing was sent" in message
    for kind in WEAK_ANSWERS:
        assert f"{kind} applies to" in message or f"; {kind} to" in message, message
    assert sent == [call] and status_of(tconn, table) is None  # the actor called; the request never left


def test_weak_answers__on_dynamodb_local__configuration_error_before_anything_runs() -> None:
    """Off labkit's embedded endpoint: the ConfigurationError endpoint faults give, before any call."""
    local = Connection("local", "http://127.0.0.1:9", "us-east-1", "t")  # nothing listens there
    called: list[str] = []

    def actor(client: Any) -> None:
        called.append("A")

    with pytest.raises(ConfigurationError, match="need labkit's embedded endpoint"):
        run_interleaving({"A": actor}, "A", conn=local, faults=["A1: stale-read"])
    with pytest.raises(ConfigurationError, match="stale-read, short-page need labkit's embedded endpoint"):
        explore({"A": actor}, conn=local, setup=None, invariant=lambda res: True, faults=["stale-read", "short-page"])
    assert called == []


def test_explore__one_actor__refused_without_faults() -> None:
    """One actor has nothing to race with but DynamoDB: explore asks for two, or for faults."""
    with pytest.raises(ValidationError, match="or one with faults"):
        explore(
            {"A": lambda client: None},
            conn=Connection("embedded", None, "us-east-1"),
            setup=None,
            invariant=lambda res: True,
        )


# ---------------------------------------------------------------- explored, found, replayed


def test_explore__read_back_after_a_write__stale_read_found_with_one_actor_and_replayed(
    tconn: Connection, table: str, tmp_path: Path
) -> None:
    """UpdateItem, then a default GetItem: found in ``'A A' with A2: stale-read``; replays, from a file too."""

    def setup() -> None:
        put_order(tconn, table)

    def answers_confirmed(res: Interleaving) -> None:
        assert res.results.get("A") == "confirmed", f"the answer shows the order {res.results.get('A')!r}"

    actors = {"A": confirm_and_read_back(table, consistent=False)}
    result = explore(actors, conn=tconn, setup=setup, invariant=answers_confirmed, faults=["stale-read"])
    assert not result.passed
    assert result.scenario == "'A A' with A2: stale-read"
    assert (result.message or "").splitlines()[0] == "the answer shows the order 'new'"
    assert result.interleaving is not None
    history = result.interleaving.history
    assert list(history["operation"]) == ["UpdateItem", "GetItem"]
    assert list(history["injected"].fillna("")) == ["", "stale-read"]
    assert status_of(tconn, table) is not None
    setup()
    again = run_interleaving(actors, result.counterexample or "", conn=tconn, faults=list(result.faults))
    assert (
        again.results == {"A": "new"} and status_of(tconn, table) == "confirmed"
    )  # the write landed; the read was old
    replay = load(result.save(tmp_path / "race.json"))
    assert replay.faults == ("A2: stale-read",)
    assert replay.run(actors, conn=tconn, setup=setup).results == {"A": "new"}


def test_explore__read_back_consistent__passes__no_call_point_takes_a_stale_read(tconn: Connection, table: str) -> None:
    """ConsistentRead=True: DynamoDB never answers it stale, so explore places no stale-read; it passes."""
    result = explore(
        {"A": confirm_and_read_back(table, consistent=True)},
        conn=tconn,
        setup=lambda: put_order(tconn, table),
        invariant=lambda res: res.results.get("A") == "confirmed",
        faults=["stale-read"],
    )
    assert result.passed and result.scenarios == 1, result.summary()


def test_explore__two_actors__the_writer_s_order_and_a_stale_read_both_named(tconn: Connection, table: str) -> None:
    """B pays the order and reads it back; A cancels it first or not: the stale read is found in an order with A."""

    def pay_and_read(client: Any) -> str:
        client.update_item(
            TableName=table,
            Key=ORDER,
            UpdateExpression="SET paid = :t",
            ExpressionAttributeValues={":t": {"BOOL": True}},
        )
        return "paid" if client.get_item(TableName=table, Key=ORDER)["Item"].get("paid") else "unpaid"

    def cancel(client: Any) -> None:
        set_status(client, table, "cancelled")

    def paid_is_seen(res: Interleaving) -> None:
        assert res.results.get("B") == "paid", f"B answered {res.results.get('B')}"

    result = explore(
        {"A": cancel, "B": pay_and_read},
        conn=tconn,
        setup=lambda: put_order(tconn, table),
        invariant=paid_is_seen,
        faults=["stale-read"],
        strategy="dpor",
    )
    assert not result.passed and result.faults == ("B2: stale-read",), result.summary()
    assert "with B2: stale-read" in (result.scenario or "") and "B2: stale-read" in result.summary()


def test_run_interleaving__unprocessed_items__batch_write_drops_its_last_item_batch_get_hands_back_its_last_key(
    tconn: Connection, table: str
) -> None:
    """BatchWriteItem: the last put is not applied, it is in UnprocessedItems; BatchGetItem: the last key too."""
    rows = [{"PK": {"S": f"ROW#{i}"}, "SK": {"S": "R"}} for i in range(3)]

    def write(client: Any) -> Any:
        return client.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": row}} for row in rows]})

    def read(client: Any) -> Any:
        return client.batch_get_item(RequestItems={table: {"Keys": rows}})

    wrote = run_interleaving({"A": write}, "A", conn=tconn, faults=["A1: unprocessed-items"])
    assert wrote.results["A"]["UnprocessedItems"] == {table: [{"PutRequest": {"Item": rows[2]}}]}
    stored = {i["PK"]["S"] for i in tconn.client.scan(TableName=table, ConsistentRead=True)["Items"]}
    assert stored == {"ROW#0", "ROW#1"}
    tconn.client.put_item(TableName=table, Item=rows[2])
    got = run_interleaving({"A": read}, "A", conn=tconn, faults=["A1: unprocessed-items"])
    assert got.results["A"]["UnprocessedKeys"][table]["Keys"] == [rows[2]]
    assert sorted(i["PK"]["S"] for i in got.results["A"]["Responses"][table]) == ["ROW#0", "ROW#1"]
    assert list(got.history["injected"]) == ["unprocessed-items"]


def test_run_interleaving__short_page__query_and_scan_end_after_one_item_with_a_last_evaluated_key(
    tconn: Connection, table: str
) -> None:
    """short-page: a page of one item and a LastEvaluatedKey; the next page (a call of its own) has the rest."""
    for i in range(3):
        tconn.client.put_item(TableName=table, Item={"PK": {"S": "CUST#1"}, "SK": {"S": f"O#{i}"}})
    query = {
        "TableName": table,
        "KeyConditionExpression": "PK = :p",
        "ExpressionAttributeValues": {":p": {"S": "CUST#1"}},
    }

    def paginate(client: Any) -> list[int]:
        return [int(page["Count"]) for page in client.get_paginator("query").paginate(**query)]

    res = run_interleaving({"A": paginate}, "A A", conn=tconn, faults=["A1: short-page"])
    assert res.results["A"] == [1, 2]
    scan = run_interleaving({"A": lambda c: c.scan(TableName=table)}, "A", conn=tconn, faults=["A1: short-page"])
    assert scan.results["A"]["Count"] == 1 and "LastEvaluatedKey" in scan.results["A"]


def test_run_interleaving__stale_read_starts_settled__it_undoes_only_the_run_s_own_writes(
    tconn: Connection, table: str
) -> None:
    """Writes made before the run (setup's) have propagated: a stale read with no write of its run is fresh."""
    put_order(tconn, table, "new")
    put_order(tconn, table, "paid")  # before the run: its image of 'new' is forgotten when the run starts

    def read(client: Any) -> str:
        return str(client.get_item(TableName=table, Key=ORDER)["Item"]["status"]["S"])

    res = run_interleaving({"A": read}, "A", conn=tconn, faults=["A1: stale-read"])
    assert res.results == {"A": "paid"}
    (injected,) = list(res.history["injected"])
    assert injected.startswith("stale-read (none; ")  # the echo: it could not differ


def test_settle_images__the_endpoint_forgets_its_kept_images__table_reads_after_it_answer(
    tconn: Connection, table: str
) -> None:
    """Labkit.SettleImages drops what is kept (a second one drops none); a stale Scan or Query after it,
    over writes made before and after, undoes only the later ones and is never a 500."""
    put_order(tconn, table, "new")
    put_order(tconn, table, "paid")
    settle_images(tconn)
    assert control(str(tconn.endpoint_url), Op.SETTLE_IMAGES, {}) == {"Dropped": 0}

    def ship_then_scan(client: Any) -> list[str]:
        client.put_item(TableName=table, Item={**ORDER, "status": {"S": "shipped"}})
        items = client.scan(TableName=table)["Items"]
        return [str(i["status"]["S"]) for i in items]

    res = run_interleaving({"A": ship_then_scan}, "A A", conn=tconn, faults=["A2: stale-read"])
    assert res.results == {"A": ["paid"]} and list(res.history["outcome"]) == ["ok", "ok"]


def test_run_interleaving__profile_dynamodb_local__the_directive_refused__the_run_stops_with_its_message() -> None:
    """Profile dynamodb-local gives no weak answers: a stale read is refused before the run (it cannot settle
    images), another weak answer ends the run at its call with the endpoint's 400, named."""
    with start_endpoint(profile=DYNAMODB_LOCAL) as endpoint:
        local = Connection("embedded", endpoint.url, "us-east-1", "orders")
        local.client.create_table(
            TableName="orders",
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        caught: list[Any] = []

        def read(client: Any) -> None:
            caught.append(client.get_item(TableName="orders", Key={"PK": {"S": "x"}}))

        with pytest.raises(ConfigurationError, match="keeps no earlier images .* nothing was run"):
            run_interleaving({"A": read}, "A", conn=local, faults=["A1: stale-read"])
        assert caught == []

        def read_batch(client: Any) -> None:
            try:
                client.batch_get_item(RequestItems={"orders": {"Keys": [{"PK": {"S": "x"}}]}})
            except BaseException as exc:  # the actor never sees the endpoint's 400: the run ends first
                caught.append(exc)
                raise

        with pytest.raises(ValidationError, match="the endpoint refused it: X-Labkit-Weak-Answer: this endpoint gives"):
            run_interleaving({"A": read_batch}, "A", conn=local, faults=["A1: unprocessed-items"])
        assert all(not isinstance(exc, ClientError) for exc in caught)
