"""recipes/home_region.py: guarded writes sent to one home Region keep their guarantee on an MREC global table.

DynamoDB's developer guide ("How DynamoDB global tables work"), MREC: "Conditional writes evaluate the
condition expression against the version of the item in the Region"; "DynamoDB will resolve the conflict
by using the modification with the latest internal timestamp on a per-item basis, referred to as a 'last
writer wins' conflict resolution method". Two callers in two Regions (each a service client,
``recipes/client.py``, with its own ``region_name``) are explored by the race lab, each replication
delivery a step: the naive use (each caller's own Region) loses a change and lets two accounts claim one
email; the home-Region recipe keeps both guarantees in every order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from botocore.exceptions import ClientError

from labkit.embedded import start_endpoint
from labkit.races import Interleaving, explore
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from recipes.client import dynamodb_client
from recipes.guarded_update import RetriesExhausted, update
from recipes.home_region import HOME_REGION, home_client
from recipes.uniqueness import register_request
from tests.cookbook.exploration import outcome
from tests.races.regions import EAST, WEST, global_table, one_owner

SETTINGS = {"PK": {"S": "SETTINGS"}, "SK": {"S": "LIMITS"}}
Lab = tuple[Connection, dict[str, Any]]


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    with start_endpoint() as endpoint, global_table(endpoint.url) as (conn, _):
        clients = {
            region: dynamodb_client(
                endpoint_url=endpoint.url,
                region_name=region,
                aws_access_key_id=C.LOCAL_ACCESS_KEY,
                aws_secret_access_key=C.LOCAL_SECRET_KEY,
            )
            for region in (EAST, WEST)
        }
        yield conn, clients


def reset(clients: dict[str, Any], table: str) -> None:
    east = clients[EAST]
    for item in east.scan(TableName=table, ConsistentRead=True)["Items"]:
        east.delete_item(TableName=table, Key={"PK": item["PK"], "SK": item["SK"]})
    east.put_item(TableName=table, Item={**SETTINGS, "version": {"N": "1"}, "limit": {"N": "10"}})


def raise_by_10(item: dict[str, Any]) -> dict[str, Any]:
    return {"limit": {"N": str(int(item["limit"]["N"]) + 10)}}


def every_raise_kept(clients: dict[str, Any], table: str) -> Any:
    """Each caller told it worked raised the limit by 10, in every Region."""

    def invariant(res: Interleaving) -> None:
        applied = sum(1 for r in res.results.values() if isinstance(r, dict))
        for region, client in clients.items():
            limit = int(client.get_item(TableName=table, Key=SETTINGS, ConsistentRead=True)["Item"]["limit"]["N"])
            assert limit == 10 + 10 * applied, f"{region}: limit {limit} after {applied} raise(s) told ok"

    return invariant


def test_update__each_caller_its_own_region__a_raise_is_lost(lab: Lab) -> None:
    """The guarded update sent to each caller's own Region: both guards pass, last writer wins, one raise lost."""
    conn, clients = lab
    table = conn.table_name
    actors = {
        name: (
            lambda c=clients[region], n=name: outcome(
                lambda: update(c, table, SETTINGS, raise_by_10, op_id=f"op-{n}", base_delay=0.001), RetriesExhausted
            )
        )
        for name, region in (("A", EAST), ("B", WEST))
    }
    result = explore(actors, conn=conn, setup=lambda: reset(clients, table), invariant=every_raise_kept(clients, table))
    assert not result.passed
    assert "limit 20 after 2 raise(s) told ok" in (result.message or "")


def test_update_with_home_client__callers_in_two_regions__every_raise_kept(lab: Lab) -> None:
    """``update(home_client(clients), ...)``: reads and writes go to the home Region; every order keeps both."""
    conn, clients = lab
    table = conn.table_name
    actors = {
        name: (
            lambda n=name: outcome(
                lambda: update(home_client(clients), table, SETTINGS, raise_by_10, op_id=f"op-{n}", base_delay=0.001),
                RetriesExhausted,
            )
        )
        for name in ("A", "B")
    }
    result = explore(actors, conn=conn, setup=lambda: reset(clients, table), invariant=every_raise_kept(clients, table))
    assert result.passed, result.message
    assert HOME_REGION == EAST


def sign_up(call: Any) -> str:
    try:
        call()
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


def test_register__each_caller_its_own_region__two_accounts_hold_one_email(lab: Lab) -> None:
    """The marker transaction sent to each caller's own Region: both commit."""
    conn, clients = lab
    table = conn.table_name
    actors = {
        name: (
            lambda c=clients[region], n=name: sign_up(
                lambda: c.transact_write_items(**register_request(table, n, "ann@example.com", n, str(uuid4())))
            )
        )
        for name, region in (("A", EAST), ("B", WEST))
    }
    result = explore(actors, conn=conn, setup=lambda: reset(clients, table), invariant=one_owner(clients, table))
    assert not result.passed
    assert "both hold ann@example.com" in (result.message or "")


def test_register_with_home_client__callers_in_two_regions__one_account_holds_the_email(lab: Lab) -> None:
    """``home_client(clients)``: both transactions go to the home Region; the marker refuses the second."""
    conn, clients = lab
    table = conn.table_name
    actors = {
        name: (
            lambda n=name: sign_up(
                lambda: home_client(clients).transact_write_items(
                    **register_request(table, n, "ann@example.com", n, str(uuid4()))
                )
            )
        )
        for name in ("A", "B")
    }
    result = explore(actors, conn=conn, setup=lambda: reset(clients, table), invariant=one_owner(clients, table))
    assert result.passed, result.message


def test_home_client__no_client_for_the_home__key_error_naming_the_regions(lab: Lab) -> None:
    """A home Region without a client is a KeyError naming the Regions there are clients for."""
    _, clients = lab
    with pytest.raises(KeyError, match="us-west-2"):
        home_client({WEST: clients[WEST]})
