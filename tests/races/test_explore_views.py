"""Every view of a weak answer, explored (issue 37 items 2 and 3, the race-lab side).

At a stale read the race lab explores the views DynamoDB may answer with, each named by the
run's writes it does not see (``B2: stale-read (index misses A1)``): a table or partition read
``behind N`` of its writes, a BatchGetItem's keys and a global secondary index's entries each on
their own ("its changes start propagating to global secondary indexes ... gradually"; BatchGetItem
"may retrieve items in parallel"). A BatchGetItem, Query or Scan beside another actor's
TransactWriteItems may see part of it (``torn-read``: read-committed in DynamoDB's isolation table).
The team code here is plain boto3.
"""

from __future__ import annotations

from typing import Any

import pytest

from labkit.engine_plugins.faults.kinds import parse_faults
from labkit.races import Interleaving, explore, run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.constants import EMAIL_INDEX_NAME
from labkit.shared.errors import ValidationError

EMAIL = "ada@example.com"


def member(user: str) -> dict[str, Any]:
    return {"PK": {"S": f"USER#{user}"}, "SK": {"S": "PROFILE"}}


def holders(client: Any, table: str) -> list[str]:
    """Who holds the email, from the email GSI (eventually consistent: a GSI has no other reads)."""
    found = client.query(
        TableName=table,
        IndexName=EMAIL_INDEX_NAME,
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": EMAIL}},
    )["Items"]
    return sorted(item["PK"]["S"] for item in found)


def write_then_verify(table: str, user: str) -> Any:
    """The issue's sign-up: write the member item, query the email GSI, back out unless it is the only holder."""

    def actor(client: Any) -> str:
        client.put_item(TableName=table, Item={**member(user), "email": {"S": EMAIL}})
        if holders(client, table) != [f"USER#{user}"]:
            client.delete_item(TableName=table, Key=member(user))
            return "backed out"
        return "kept"

    return actor


def with_marker(table: str, user: str) -> Any:
    """The marker-transaction sign-up: the member item and an EMAIL# marker, put together only if the marker is new."""

    def actor(client: Any) -> str:
        try:
            client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": {**member(user), "email": {"S": EMAIL}}}},
                    {
                        "Put": {
                            "TableName": table,
                            "Item": {"PK": {"S": f"EMAIL#{EMAIL}"}, "SK": {"S": "MARKER"}, "owner": {"S": user}},
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    },
                ]
            )
        except client.exceptions.TransactionCanceledException:
            return "taken"
        return "kept" if holders(client, table) else "kept (index behind)"

    return actor


def one_holder_at_most(conn: Connection, table: str) -> Any:
    def invariant(res: Interleaving) -> None:
        items = conn.client.scan(TableName=table, ConsistentRead=True)["Items"]
        users = sorted(i["PK"]["S"] for i in items if i["PK"]["S"].startswith("USER#") and i.get("email"))
        assert len(users) <= 1, f"{len(users)} members hold {EMAIL}: {', '.join(users)}"

    return invariant


def empty(conn: Connection, table: str) -> Any:
    def setup() -> None:
        for item in conn.client.scan(TableName=table, ConsistentRead=True)["Items"]:
            conn.client.delete_item(TableName=table, Key={"PK": item["PK"], "SK": item["SK"]})

    return setup


# ---------------------------------------------------------------- the program


def test_explore__write_then_verify_on_a_gsi__fresh_answers__proved(tconn: Connection, table: str) -> None:
    """With fresh answers the later query sees both members: never two holders (every order explored)."""
    actors = {"A": write_then_verify(table, "a"), "B": write_then_verify(table, "b")}
    result = explore(actors, conn=tconn, setup=empty(tconn, table), invariant=one_holder_at_most(tconn, table))
    assert result.passed, result.summary()


def test_explore__write_then_verify_on_a_gsi__stale_read__each_query_misses_the_other_s_entry__found(
    tconn: Connection, table: str
) -> None:
    """A GSI entry lags per base item: B's query misses A's earlier entry and sees its own; both stay."""
    actors = {"A": write_then_verify(table, "a"), "B": write_then_verify(table, "b")}
    result = explore(
        actors, conn=tconn, setup=empty(tconn, table), invariant=one_holder_at_most(tconn, table), faults=["stale-read"]
    )
    assert not result.passed, result.summary()
    (fault,) = result.faults
    assert fault in ("B2: stale-read (index misses A1)", "A2: stale-read (index misses B1)"), result.summary()
    assert fault in result.summary()
    # the counterexample replays, the view resolved against the replayed run's writes
    empty(tconn, table)()
    replay = run_interleaving(actors, result.counterexample or "", conn=tconn, faults=list(result.faults))
    assert set(replay.results.values()) == {"kept"}
    injected = [str(i) for i in replay.history["injected"].fillna("") if i]
    assert injected == [fault.split(": ", 1)[1]]


def test_explore__marker_transaction_version__stale_read__passes(tconn: Connection, table: str) -> None:
    """The marker transaction decides uniqueness itself: no stale view of the index breaks it."""
    actors = {"A": with_marker(table, "a"), "B": with_marker(table, "b")}
    result = explore(
        actors, conn=tconn, setup=empty(tconn, table), invariant=one_holder_at_most(tconn, table), faults=["stale-read"]
    )
    assert result.passed, result.summary()
    assert result.scenarios > 1  # the index reads took stale views, and none broke it


# ---------------------------------------------------------------- multi-write views of one partition


def test_explore__query_of_a_partition__answered_1_2_and_3_writes_behind(tconn: Connection, table: str) -> None:
    """A replica lags as a prefix of its partition's writes: after three writes a Query sees 3, 2, 1 or 0 of them."""
    part = {"S": "ORDER#1"}

    def writer(client: Any) -> str:
        for line in ("1", "2", "3"):
            client.put_item(TableName=table, Item={"PK": part, "SK": {"S": f"LINE#{line}"}})
        return "wrote"

    def reader(client: Any) -> int:
        out = client.query(TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues={":p": part})
        return int(out["Count"])

    seen: set[int] = set()

    def record(res: Interleaving) -> None:
        if res.turns[-1] == "R":  # the read after every write
            seen.add(int(res.results["R"]))

    result = explore(
        {"W": writer, "R": reader}, conn=tconn, setup=empty(tconn, table), invariant=record, faults=["stale-read"]
    )
    assert result.passed, result.summary()
    assert seen == {0, 1, 2, 3}


def test_explore__batch_get_after_two_writes__each_key_on_its_own__the_older_write_missed_alone(
    tconn: Connection, table: str
) -> None:
    """BatchGetItem "may retrieve items in parallel": after two puts it may see the later without the earlier."""
    keys = [{"PK": {"S": f"ITEM#{i}"}, "SK": {"S": "A"}} for i in (1, 2)]

    def writer(client: Any) -> str:
        for key in keys:
            client.put_item(TableName=table, Item=key)
        return "wrote"

    def reader(client: Any) -> tuple[str, ...]:
        got = client.batch_get_item(RequestItems={table: {"Keys": keys}})["Responses"][table]
        return tuple(sorted(i["PK"]["S"] for i in got))

    seen: set[tuple[str, ...]] = set()

    def record(res: Interleaving) -> None:
        if res.turns[-1] == "R":
            seen.add(res.results["R"])

    result = explore(
        {"W": writer, "R": reader}, conn=tconn, setup=empty(tconn, table), invariant=record, faults=["stale-read"]
    )
    assert result.passed, result.summary()
    assert seen == {(), ("ITEM#1",), ("ITEM#2",), ("ITEM#1", "ITEM#2")}  # ITEM#2 alone: misses W1 only


# ---------------------------------------------------------------- torn reads


def test_explore__batch_get_beside_a_transaction__torn_read__sees_one_write_without_the_other__found(
    tconn: Connection, table: str
) -> None:
    """BatchGetItem is read-committed against a TransactWriteItems: it may see the marker and not the member."""
    marker = {"PK": {"S": f"EMAIL#{EMAIL}"}, "SK": {"S": "MARKER"}}

    def audit(client: Any) -> str:
        got = client.batch_get_item(RequestItems={table: {"Keys": [member("a"), marker], "ConsistentRead": True}})
        kinds = sorted(i["SK"]["S"] for i in got["Responses"][table])
        return "orphan" if kinds == ["MARKER"] else "ok"

    def invariant(res: Interleaving) -> None:
        assert res.results["B"] == "ok", "the audit saw the marker without its member"

    actors = {"A": with_marker(table, "a"), "B": audit}
    result = explore(actors, conn=tconn, setup=empty(tconn, table), invariant=invariant, faults=["torn-read"])
    assert not result.passed, result.summary()
    assert result.faults == ("B1: torn-read (misses A1[0])",), result.summary()


def test_explore__torn_read_after_the_writer_s_next_call__never_placed(tconn: Connection, table: str) -> None:
    """Once the writer made another call its transaction is over: a read after that is never torn."""
    marker = {"PK": {"S": f"EMAIL#{EMAIL}"}, "SK": {"S": "MARKER"}}

    def writer(client: Any) -> str:
        with_marker(table, "a")(client)  # the transaction, then its GSI query
        return "done"

    def audit(client: Any) -> str:
        got = client.batch_get_item(RequestItems={table: {"Keys": [member("a"), marker]}})
        return str(len(got["Responses"][table]))

    def invariant(res: Interleaving) -> None:
        if res.turns.index("B") == 2:  # after the writer's query: the transaction ended before the read
            assert res.results["B"] == "2", res.history

    result = explore(
        {"A": writer, "B": audit}, conn=tconn, setup=empty(tconn, table), invariant=invariant, faults=["torn-read"]
    )
    assert result.passed, result.summary()


# ---------------------------------------------------------------- the notation


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("B2: stale-read (behind 0)", "1 or more"),
        ("B2: stale-read (misses X)", "is not a call"),
        ("B2: torn-read (behind 2)", "only stale-read lags"),
        ("B2: torn-read (index misses A1)", "stale-read view"),
        ("B2: lose-response (misses A1)", "only stale-read and torn-read name a view"),
        ("B2: stale-read (misses A1, A1)", "named twice"),
        ("B2: stale-read (sideways)", "not a view"),
    ],
)
def test_parse_faults__a_view_badly_named__clear_error(spec: str, message: str) -> None:
    """A view is behind N, misses A1[, ...] or index misses A1[, ...]; anything else is refused with the forms."""
    with pytest.raises(ValidationError, match=message):
        parse_faults([spec], ["A", "B"])


def test_run_interleaving__a_view_naming_a_write_not_yet_made__refused__the_read_not_sent(
    tconn: Connection, table: str
) -> None:
    """In 'B A' B's query runs before A's write: a view missing A1 cannot happen there; one clear error."""
    actors = {"A": write_then_verify(table, "a"), "B": lambda client: holders(client, table)}
    empty(tconn, table)()
    with pytest.raises(
        ValidationError,
        match=r"^stale-read \(index misses A1\) on B1: in this order the view names writes the run has not made",
    ):
        run_interleaving(actors, "B A A A", conn=tconn, faults=["B1: stale-read (index misses A1)"])
