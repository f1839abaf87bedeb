"""recipes/table.py and recipes/client.py: two deploys create the table once; the client's retries make a
lost answer harmless for an idempotent request, and a client without them lets it through."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.patterns import uniqueness as uniq
from labkit.races import explore
from labkit.shared.backend import Connection
from labkit.shared.table import reset_table, table_spec
from recipes.client import CONFIG
from recipes.table import DEFINITION, ensure_table
from recipes.uniqueness import register_request
from tests.cookbook.exploration import FAULTS, Runs, service_client


def test_definition__the_lab_table_labkit_creates() -> None:
    """One shape: the recipe's CreateTable request is labkit's lab table (name and tags aside)."""
    spec = table_spec("labkit-x")
    assert {k: v for k, v in spec.items() if k not in ("TableName", "Tags")} == DEFINITION


def two_deploys(conn: Connection, create: Callable[[Any, str], None]) -> Any:
    """A and B (two deploys, botocore's retries on) create the same table at once."""
    client, name = service_client(conn), f"labkit-recipe-{uuid.uuid4().hex[:8]}"

    def setup() -> None:
        try:
            conn.client.delete_table(TableName=name)
            conn.client.get_waiter("table_not_exists").wait(TableName=name)
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ResourceNotFoundException"

    def created_and_active(res: Any) -> None:
        assert not res.errors, res.errors
        table = conn.client.describe_table(TableName=name)["Table"]
        assert table["TableStatus"] == "ACTIVE" and table["GlobalSecondaryIndexes"][0]["IndexName"] == "email-index"

    try:
        return explore(
            {"A": lambda: create(client, name), "B": lambda: create(client, name)},
            conn=conn,
            setup=setup,
            invariant=created_and_active,
            faults=FAULTS,
        )
    finally:
        setup()


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_ensure_table__two_deploys_every_order_and_fault__one_active_table(conn: Connection) -> None:
    """Every order, a lost answer (botocore resends; the table exists) at each call: no error, one table."""
    result = two_deploys(conn, ensure_table)
    assert result.passed, result.summary()


def test_ensure_table__create_without_resource_in_use__the_second_deploy_fails(conn: Connection) -> None:
    """Broken: a plain create_table fails when the other deploy (or our own lost first attempt) created it."""
    result = two_deploys(conn, lambda client, name: client.create_table(TableName=name, **DEFINITION))
    assert not result.passed and "ResourceInUseException" in (result.message or ""), result.summary()


def test_config__standard_retries_and_both_timeouts() -> None:
    """Standard mode, 3 attempts in all, a short connect timeout and a bounded read timeout."""
    options: Any = CONFIG  # botocore's stubs do not declare Config's attributes
    assert options.retries == {"mode": "standard", "total_max_attempts": 3}
    assert (options.connect_timeout, options.read_timeout) == (2, 5)


def sign_ups_with(conn: Connection, client: Any) -> Any:
    """Two sign-ups (different emails), each one TransactWriteItems with its token, on ``client``."""
    table, runs = conn.table_name, Runs()

    def setup() -> None:
        runs.next()
        reset_table(conn)

    def sign_up(name: str) -> Callable[[], None]:
        return lambda: client.transact_write_items(
            **register_request(table, f"{name}-id", f"{name}@x.io", name.lower(), runs.token(name))
        )

    def both_created(res: Any) -> None:
        assert not res.errors, res.errors
        assert int(uniq.table_items(conn.client, table)["PK"].str.startswith("ACCT#").sum()) == 2

    return explore(
        {"A": sign_up("A"), "B": sign_up("B")}, conn=conn, setup=setup, invariant=both_created, faults=["lose-response"]
    )


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_client__a_lost_answer__resent_with_the_same_token__both_created(tconn: Connection, sdk: Any) -> None:
    """The recipe's client: botocore resends the lost TransactWriteItems, same token, answered once."""
    result = sign_ups_with(tconn, sdk)
    assert result.passed, result.summary()


def test_client__without_retries__the_lost_answer_reaches_the_caller(tconn: Connection) -> None:
    """Broken configuration: one attempt, so the lost answer surfaces as a ReadTimeoutError."""
    result = sign_ups_with(tconn, tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1}))
    assert not result.passed and "Read timeout" in (result.message or ""), result.summary()
