"""Every public function, driven into each failure, fails with a LabkitError (cause kept).

Failures: the endpoint is down (a closed port on 127.0.0.1), the table is missing, a value is
too large, a number DynamoDB cannot store. Each call names the class it must raise.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

import labkit
from labkit.patterns import singleton as s
from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    BackendUnavailable,
    ItemTooLarge,
    LabkitError,
    TableError,
    ValidationError,
)

Call = Callable[[Any, str, Connection], object]

#: name -> call(client, table, conn). ``conn`` points at the same endpoint and table.
CALLS: dict[str, Call] = {
    "ensure_table": lambda c, t, conn: labkit.ensure_table(conn, t),
    "reset_table": lambda c, t, conn: labkit.reset_table(conn, t),
    "delete_table": lambda c, t, conn: labkit.delete_table(conn, t),
    "scan_items": lambda c, t, conn: labkit.lab.invariants.scan_items(conn, t),
    "FlagStore.set_flags": lambda c, t, conn: s.FlagStore(c, t).set_flags(signup_enabled=True),
    "FlagStore.update": lambda c, t, conn: s.FlagStore(c, t).update(lambda f: {"signup_enabled": True}),
    "FlagStore.create": lambda c, t, conn: s.FlagStore(c, t).create(),
    "FlagStore.toggle": lambda c, t, conn: s.FlagStore(c, t).toggle("signup_enabled", True, expected=False),
    "migrate": lambda c, t, conn: s.migrate(s.FlagStore(c, t), dict),
    "retire": lambda c, t, conn: s.retire(s.FlagStore(c, t)),
    "stored_item": lambda c, t, conn: s.stored_item(s.FlagStore(c, t)),
    "unsafe_set_flags": lambda c, t, conn: s.unsafe_set_flags(s.FlagStore(c, t), signup_enabled=True),
    "register": lambda c, t, conn: u.register(c, t, email="ada@lovelace.io", username="ada"),
    "UniqueRegistry.register": lambda c, t, conn: u.UniqueRegistry(c, t).register(email="ada@x.io", username="a"),
    "taken_values": lambda c, t, conn: u.taken_values(c, t, u.prepare_registration(email="a@x.io", username="a")),
    "change_email": lambda c, t, conn: u.change_email(c, t, "a1", "new@x.io"),
    "change_username": lambda c, t, conn: u.change_username(c, t, "a1", "new"),
    "delete_account": lambda c, t, conn: u.delete_account(c, t, "a1"),
    "get_account": lambda c, t, conn: u.get_account(c, t, "a1"),
    "table_items": lambda c, t, conn: u.table_items(c, t),
    "audit": lambda c, t, conn: u.audit(c, t),
    "repair": lambda c, t, conn: u.repair(c, t),
    "email_in_use": lambda c, t, conn: u.email_in_use(c, t, "ada@x.io", read="scan"),
    "register_check_then_write": lambda c, t, conn: u.register_check_then_write(
        c, t, email="ada@x.io", username="ada", read="scan"
    ),
    "send_seed_transaction": lambda c, t, conn: u.send_seed_transaction(c, t),
    "submit": lambda c, t, conn: u.submit(c, t, u.prepare_registration(email="a@x.io", username="a")),
    "account_items": lambda c, t, conn: u.account_items(c, t, "a1"),
    "UniqueRegistry.change_email": lambda c, t, conn: u.UniqueRegistry(c, t).change_email("a1", "b@x.io", token="t"),
    "UniqueRegistry.delete": lambda c, t, conn: u.UniqueRegistry(c, t).delete("a1", token="t"),
    "UniqueRegistry.audit": lambda c, t, conn: u.UniqueRegistry(c, t).audit(),
    "unsafe_update": lambda c, t, conn: s.unsafe_update(s.FlagStore(c, t), lambda f: {"signup_enabled": True}),
    "lost_changes": lambda c, t, conn: s.lost_changes(s.FlagStore(c, t), {"signup_enabled": True}),
    "table_exists": lambda c, t, conn: labkit.shared.table.table_exists(conn, t),
}
#: Functions for which a missing table is no failure (they create it, or answer False).
CREATES_TABLE = {"ensure_table", "reset_table", "delete_table", "table_exists"}


@pytest.fixture(scope="module")
def down(conn: Connection) -> tuple[Any, Connection]:
    """A client and connection to a closed port on 127.0.0.1: nothing listens there."""
    dead = Connection("endpoint", "http://127.0.0.1:9", conn.region, "labkit-down")
    return dead.new_client(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=1), dead


@pytest.mark.parametrize("name", sorted(CALLS))
def test_public_call__endpoint_down__backend_unavailable(name: str, down: tuple[Any, Connection]) -> None:
    """A closed port: BackendUnavailable (a LabkitError) with botocore's error as __cause__."""
    client, dead = down
    dead._client = client  # the shared client: the one without retries
    with pytest.raises(BackendUnavailable) as info:
        CALLS[name](client, "labkit-down", dead)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize("name", sorted(set(CALLS) - CREATES_TABLE))
def test_public_call__table_missing__table_error(name: str, conn: Connection) -> None:
    """A table that does not exist: TableError naming ensure_table, ClientError as __cause__."""
    missing = f"labkit-missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(TableError, match="ensure_table") as info:
        CALLS[name](conn.client, missing, conn)
    assert info.value.__cause__ is not None


BAD_VALUES: dict[str, tuple[Call, type[LabkitError]]] = {
    "set_flags huge banner": (
        lambda c, t, conn: s.FlagStore(c, t).set_flags(banner_message="x" * 410_000),
        ItemTooLarge,
    ),
    "set_flags 39-digit int": (
        lambda c, t, conn: s.FlagStore(c, t).set_flags(rate_limit_per_minute=10**39),
        ValidationError,
    ),
    "register huge attribute": (
        lambda c, t, conn: u.register(c, t, email="a@x.io", username="a", attributes={"bio": "x" * 410_000}),
        ItemTooLarge,
    ),
    "register float attribute": (
        lambda c, t, conn: u.register(c, t, email="a@x.io", username="a", attributes={"score": 1.5}),
        ValidationError,
    ),
    "register 39-digit attribute": (
        lambda c, t, conn: u.register(c, t, email="a@x.io", username="a", attributes={"n": 10**39}),
        ValidationError,
    ),
    "register lone surrogate": (
        lambda c, t, conn: u.register(c, t, email="a@x.io", username="a", attributes={"bio": "a\ud800"}),
        ValidationError,
    ),
    "register lone surrogate in a value": (
        lambda c, t, conn: u.register(c, t, email="a@x.io", username="a\ud800"),
        ValidationError,
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_public_call__bad_value__validation_error_nothing_written(case: str, tconn: Connection) -> None:
    """Too large or not storable: labkit's ValidationError subclass before any write; table stays empty."""
    call, expected = BAD_VALUES[case]
    with pytest.raises(expected):
        call(tconn.client, tconn.table_name, tconn)
    assert u.table_items(tconn.client, tconn.table_name).empty
