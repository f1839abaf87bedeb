"""LABKIT_ENDPOINT_URL, the README's way to point labkit at any endpoint, works for a team's pytest too.

Run as a user runs it: `labkit serve` started for real in its own process, then a plain ``python -m
pytest`` in an empty folder holding only a team's test file, on a clean runner (no AWS variable, an
empty HOME) whose one labkit setting is LABKIT_ENDPOINT_URL.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from tests.helpers import TEAM_POINTS
from tests.plugin.teams import Session, run_team
from tests.serving import Served, labkit_serve

#: A team's tests: labkit_conn's table, a race explored on it, and the team's own plain client.
TEAM_TESTS = (
    TEAM_POINTS
    + """
import os

import boto3


def test_labkit_conn__is_on_the_served_endpoint(labkit_conn, labkit_backend):
    assert labkit_backend == os.environ["LABKIT_ENDPOINT_URL"] == labkit_conn.endpoint_url
    assert labkit_conn.backend == "endpoint"


def test_points__atomic_add__no_lost_update(labkit_conn):
    conn = labkit_conn

    def setup():
        conn.client.put_item(TableName=conn.table_name, Item={**KEY, "balance": {"N": "0"}})

    def invariant(res):
        item = conn.client.get_item(TableName=conn.table_name, Key=KEY, ConsistentRead=True)["Item"]
        assert item["balance"]["N"] == "11"

    result = explore({"A": lambda c: add_points_atomic(c, conn.table_name, 1),
                      "B": lambda c: add_points_atomic(c, conn.table_name, 10)},
                     conn=conn, setup=setup, invariant=invariant)
    assert result.passed, result.summary()


def test_own_client__routed_to_the_served_endpoint(labkit_conn):
    client = boto3.client("dynamodb")  # no endpoint, no region, no credentials configured: labkit's
    assert labkit_conn.table_name in client.list_tables()["TableNames"]
"""
)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """`labkit serve` in its own process, on a free port of 127.0.0.1."""
    with labkit_serve() as running:
        yield running


@pytest.fixture(scope="module")
def team_run(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """ONE plain pytest of a team's test file, from an empty folder, with LABKIT_ENDPOINT_URL set."""
    folder = tmp_path_factory.mktemp("endpoint-url") / "team"
    folder.mkdir()
    (folder / "test_points.py").write_text(TEAM_TESTS)
    return run_team(folder, "-q", env={"LABKIT_ENDPOINT_URL": served.url})


def test_plugin__labkit_endpoint_url_set__labkit_conn_tests_pass_against_labkit_serve(team_run: Session) -> None:
    """With LABKIT_ENDPOINT_URL naming a running `labkit serve`, every labkit_conn test runs there and passes
    (it used to error: "both backend='embedded' and an endpoint URL ... were given")."""
    assert team_run.of("test_points") == {
        "test_labkit_conn__is_on_the_served_endpoint": "passed",
        "test_points__atomic_add__no_lost_update": "passed",
        "test_own_client__routed_to_the_served_endpoint": "passed",
    }, team_run.log


def test_plugin__labkit_endpoint_url_set__tables_made_on_the_served_endpoint_are_dropped(
    team_run: Session, served: Served
) -> None:
    """The tables the team's run made on the served endpoint are gone when it ends."""
    assert team_run.of("test_points")["test_labkit_conn__is_on_the_served_endpoint"] == "passed", team_run.log
    client = boto3.client(
        "dynamodb", endpoint_url=served.url, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    assert client.list_tables()["TableNames"] == []
