"""The two cross-region losses issue 38 names, found by explore from plain boto3 team code, and their fixes.

DynamoDB's developer guide ("How DynamoDB global tables work"), MREC: "Conditional writes evaluate the
condition expression against the version of the item in the Region"; "If the same item is modified in
multiple Regions simultaneously, DynamoDB will resolve the conflict by using the modification with the
latest internal timestamp on a per-item basis, referred to as a 'last writer wins' conflict resolution
method". So lesson 01 §7's version guard and lesson 02's marker transaction each hold in one region and
lose across two: both writers pass their condition in their own region, and replication settles the
item silently. Routing every write of the item (every sign-up transaction) to one home region restores
the single-region guarantee; so does MRSC, where "a conflicting write from another region fails with
ReplicatedWriteConflictException" (API reference: "The request was rejected because one or more items in
the request are being modified by a request in another Region.").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from labkit.embedded import start_endpoint
from labkit.races import Exploration, explore
from labkit.shared.backend import Connection
from tests.races.regions import EAST, admins, global_table, no_change_lost, one_owner, reset, sign_ups

Lab = tuple[Connection, dict[str, Any]]


def explored(lab: Lab, actors: Callable[..., Any], invariant: Callable[..., Any], **options: Any) -> Exploration:
    """explore the actors ``actors(clients, table, **options)`` make, each run from ``reset`` in us-east-1,
    judged by ``invariant(clients, table)``."""
    conn, clients = lab
    table = conn.table_name
    return explore(
        actors(clients, table, **options),
        conn=conn,
        setup=lambda: reset(clients[EAST], table),
        invariant=invariant(clients, table),
    )


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with start_endpoint() as endpoint:
        yield endpoint.url


@pytest.fixture(scope="module")
def mrec(url: str) -> Iterator[Lab]:
    with global_table(url) as made:
        yield made


@pytest.fixture(scope="module")
def mrsc(url: str) -> Iterator[Lab]:
    with global_table(url, strong=True) as made:
        yield made


def test_guarded_update__two_regions_mrec__explore_finds_a_change_lost(mrec: Lab) -> None:
    """Two admins, one per region, each version-guarded: both told ok, one change gone (last writer wins)."""
    result = explored(mrec, admins, no_change_lost)
    assert not result.passed
    assert result.interleaving is not None and result.interleaving.results == {"A": "ok", "B": "ok"}
    assert "a change was lost" in (result.message or "")


def test_guarded_update__home_region__every_order_keeps_both_changes(mrec: Lab) -> None:
    """Both admins send the settings item's reads and writes to us-east-1: the guard holds in every order."""
    result = explored(mrec, admins, no_change_lost, home=EAST)
    assert result.passed, result.message


@pytest.mark.slow  # 13-28 s; lessons 01/02 Optional I/J run the same MRSC fix in the fast loop
def test_guarded_update__mrsc__every_order_keeps_every_change_told_ok(mrsc: Lab) -> None:
    """MRSC: the other region's write is refused (condition, or ReplicatedWriteConflictException) and retried."""
    result = explored(mrsc, admins, no_change_lost)
    assert result.passed, result.message


def test_sign_up__two_regions_mrec__both_transactions_commit(mrec: Lab) -> None:
    """The same email signed up in two regions: both marker transactions commit; one account keeps an email
    whose marker names the other."""
    result = explored(mrec, sign_ups, one_owner)
    assert not result.passed
    assert result.interleaving is not None and result.interleaving.results == {"A": "ok", "B": "ok"}
    assert "both hold ann@example.com" in (result.message or "")


def test_sign_up__home_region__one_account_holds_the_email(mrec: Lab) -> None:
    """Both sign-ups send their transaction to us-east-1: the marker's condition refuses the second."""
    result = explored(mrec, sign_ups, one_owner, home=EAST)
    assert result.passed, result.message


@pytest.mark.slow  # 13-28 s; lessons 01/02 Optional I/J run the same MRSC fix in the fast loop
def test_sign_up__mrsc__one_account_holds_the_email(mrsc: Lab) -> None:
    """MRSC: the second region's transaction is refused while the first is in flight, or by the marker after."""
    result = explored(mrsc, sign_ups, one_owner)
    assert result.passed, result.message
