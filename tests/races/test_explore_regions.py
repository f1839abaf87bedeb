"""Replication deliveries as steps of the race lab (issue 38, item 3; decision 210).

DynamoDB's developer guide ("How DynamoDB global tables work"): "Changes to items in an MREC global table
replica are asynchronously replicated to all other replicas"; "Conditional writes evaluate the condition
expression against the version of the item in the Region"; AWS Prescriptive Guidance: "Items are
replicated individually. Items that are updated within a single transaction might not be replicated
together." So a delivery is a step of its own: explore orders it among the calls, names it after the call
that made it and its target region, and makes the ones a run left pending before the invariant is judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labkit.embedded import start_endpoint
from labkit.engine_plugins.faults import replications, set_replication_lag
from labkit.races import Interleaving, explore, run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError, ValidationError
from tests.races.regions import EAST, SETTINGS, WEST, admins, global_table, guarded_flag, reset


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with start_endpoint() as endpoint:
        yield endpoint.url


@pytest.fixture
def lab(url: str) -> Iterator[tuple[Connection, dict[str, Any]]]:
    with global_table(url) as made:
        yield made


def flags(client: Any, table: str) -> set[str]:
    return set(client.get_item(TableName=table, Key=SETTINGS, ConsistentRead=True)["Item"]["flags"]["SS"])


def test_run_interleaving__delivery_named_in_the_order__made_at_that_turn(
    lab: tuple[Connection, dict[str, Any]],
) -> None:
    """``[A2 -> us-west-2]`` is a turn: made there, B reads A's change in us-west-2 and keeps it."""
    conn, clients = lab
    reset(clients[EAST], conn.table_name)
    res = run_interleaving(admins(clients, conn.table_name), "A A [A2 -> us-west-2] B B", conn=conn)
    assert res.turns == ("A", "A", "[A2 -> us-west-2]", "B", "B")
    assert res.results == {"A": "ok", "B": "ok"}
    assert flags(clients[WEST], conn.table_name) == flags(clients[EAST], conn.table_name) == {"base", "a", "b"}
    replicate = [r for r in res.records if r["operation"] == "Replicate"]
    assert [(r["actor"], r["params"]["To"], r["params"]["Outcome"]) for r in replicate] == [
        ("[A2 -> us-west-2]", WEST, "applied")
    ]


def test_run_interleaving__delivery_not_named__made_when_the_run_ends_last_writer_wins(
    lab: tuple[Connection, dict[str, Any]],
) -> None:
    """Deliveries the order leaves out are made before the run returns: the replicas converge, B's write wins."""
    conn, clients = lab
    reset(clients[EAST], conn.table_name)
    res = run_interleaving(admins(clients, conn.table_name), "A A B B", conn=conn)
    assert res.results == {"A": "ok", "B": "ok"}
    assert flags(clients[EAST], conn.table_name) == flags(clients[WEST], conn.table_name) == {"base", "b"}
    assert replications(conn) == []


def test_run_interleaving__converge_false__replicas_left_as_the_run_left_them(
    lab: tuple[Connection, dict[str, Any]],
) -> None:
    """``converge=False``: the deliveries stay pending; each region holds its own write."""
    conn, clients = lab
    reset(clients[EAST], conn.table_name)
    run_interleaving(admins(clients, conn.table_name), "A A B B", conn=conn, converge=False)
    assert flags(clients[EAST], conn.table_name) == {"base", "a"}
    assert flags(clients[WEST], conn.table_name) == {"base", "b"}
    assert sorted((d["From"], d["To"]) for d in replications(conn)) == [(EAST, WEST), (WEST, EAST)]


def test_run_interleaving__converge_not_a_bool__validation_error_nothing_run(
    lab: tuple[Connection, dict[str, Any]],
) -> None:
    """A converge that is not True or False is refused before anything runs."""
    conn, clients = lab
    with pytest.raises(ValidationError, match="converge must be True"):
        run_interleaving(admins(clients, conn.table_name), "A B", conn=conn, converge="yes")  # type: ignore[arg-type]


def test_run_interleaving__delivery_of_an_unknown_actor__race_error(lab: tuple[Connection, dict[str, Any]]) -> None:
    """An order naming the delivery of an actor that does not exist is refused, naming it."""
    conn, clients = lab
    with pytest.raises(RaceError, match=r"\[C1 -> us-west-2\]"):
        run_interleaving(admins(clients, conn.table_name), "A [C1 -> us-west-2] B", conn=conn)


def test_explore__two_regions__deliveries_are_steps_every_order_explored(
    lab: tuple[Connection, dict[str, Any]],
) -> None:
    """Two admins of two calls and one delivery each: exhaustive search runs all 20 orders (a delivery after
    its call; those left when the admins are done are steps too); DPOR fewer."""
    conn, clients = lab
    actors = admins(clients, conn.table_name)
    seen: set[tuple[str, ...]] = set()

    def record(res: Interleaving) -> None:
        seen.add(res.turns)

    every = explore(
        actors, conn=conn, setup=lambda: reset(clients[EAST], conn.table_name), invariant=record, strategy="exhaustive"
    )
    assert every.passed and every.runs == len(seen) == 20
    assert ("A", "A", "[A2 -> us-west-2]", "B", "B", "[B2 -> us-east-1]") in seen
    dpor = explore(
        actors,
        conn=conn,
        setup=lambda: reset(clients[EAST], conn.table_name),
        invariant=None,
        strategy="dpor",
        allow=["lost-update"],
    )
    assert dpor.passed and dpor.runs < every.runs


def test_explore__marker_janitor__counterexample_names_the_delivery(lab: tuple[Connection, dict[str, Any]]) -> None:
    """A janitor in us-west-2 deletes a marker whose owner it cannot find: a transaction's items arrive one by
    one, so explore finds the marker delivered before its account, and names that delivery."""
    conn, clients = lab
    table = conn.table_name
    account = {"PK": {"S": "ACCT#a1"}, "SK": {"S": "PROFILE"}}
    marker = {"PK": {"S": "UNIQ#EMAIL#ann@example.com"}, "SK": {"S": "LOCK"}}

    def sign_up() -> None:
        clients[EAST].transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": {**account, "email": {"S": "ann@example.com"}}}},
                {"Put": {"TableName": table, "Item": {**marker, "owner": {"S": "a1"}}}},
            ]
        )

    def janitor() -> None:
        west = clients[WEST]
        found = west.get_item(TableName=table, Key=marker, ConsistentRead=True).get("Item")
        if found is not None and "Item" not in west.get_item(TableName=table, Key=account, ConsistentRead=True):
            west.delete_item(TableName=table, Key=marker)

    def setup() -> None:
        for key in (account, marker):
            clients[EAST].delete_item(TableName=table, Key=key)

    def marker_kept(res: Interleaving) -> None:
        for region, client in clients.items():
            assert "Item" in client.get_item(TableName=table, Key=marker, ConsistentRead=True), f"{region}: no marker"

    result = explore({"A": sign_up, "J": janitor}, conn=conn, setup=setup, invariant=marker_kept)
    assert not result.passed
    assert result.counterexample == "A [A1 -> us-west-2 #2] J J J [A1 -> us-west-2] [J3 -> us-east-1]"
    setup()
    again = run_interleaving({"A": sign_up, "J": janitor}, result.counterexample, conn=conn)
    with pytest.raises(AssertionError, match="no marker"):
        marker_kept(again)


def test_explore__lag_zero__replication_synchronous_no_delivery_steps(lab: tuple[Connection, dict[str, Any]]) -> None:
    """With the lag set to 0 (replication as if synchronous) explore holds nothing: no delivery is a step,
    and the guarded update keeps both changes in every order."""
    conn, clients = lab
    previous = set_replication_lag(conn, 0)
    try:
        turns: set[tuple[str, ...]] = set()

        def both_kept(res: Interleaving) -> None:
            turns.add(res.turns)
            assert flags(clients[EAST], conn.table_name) == {"base", "a", "b"}

        result = explore(
            admins(clients, conn.table_name),
            conn=conn,
            setup=lambda: reset(clients[EAST], conn.table_name),
            invariant=both_kept,
            strategy="exhaustive",
        )
        assert result.passed, result.message
        assert not any(t.startswith("[") for order in turns for t in order)
    finally:
        set_replication_lag(conn, previous)


def test_guarded_flag__one_region__retries_until_it_applies(lab: tuple[Connection, dict[str, Any]]) -> None:
    """The team code itself, alone in one region: one attempt, ``ok``."""
    conn, clients = lab
    reset(clients[EAST], conn.table_name)
    assert guarded_flag(clients[EAST], conn.table_name, "a") == "ok"
