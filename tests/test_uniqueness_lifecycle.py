"""change_* and delete_account are safe to retry with a pinned token after a lost answer."""

from __future__ import annotations

import pytest

from labkit import uniqueness as u
from labkit.backend import Connection
from labkit.errors import ConnectionClosedError, NotFound

ADA = "ada@lovelace.io"


def test_delete_account__retried_with_token_after_lost_response__returns_account_not_not_found(
    tconn: Connection,
) -> None:
    """The delete was applied, its answer lost; the retry with the same token succeeds with the same account."""
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    reg = u.register(client, tconn.table_name, email=ADA, username="ada")
    u.lose_next_response(client)
    with pytest.raises(ConnectionClosedError):
        u.delete_account(client, tconn.table_name, reg.account_id, token="delete-ada-1")
    account = u.delete_account(client, tconn.table_name, reg.account_id, token="delete-ada-1")
    assert (account["id"], account["email"]) == (reg.account_id, ADA)
    assert u.table_items(client, tconn.table_name).empty


def test_delete_account__retried_without_token__not_found(tconn: Connection) -> None:
    """Without a pinned token a retry is a new request: the account is gone, NotFound says so."""
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    reg = u.register(client, tconn.table_name, email=ADA, username="ada")
    u.lose_next_response(client)
    with pytest.raises(ConnectionClosedError):
        u.delete_account(client, tconn.table_name, reg.account_id)
    with pytest.raises(NotFound):
        u.delete_account(client, tconn.table_name, reg.account_id)


def test_change_email__retried_with_token_after_lost_response__applied_once_returns_true(
    tconn: Connection,
) -> None:
    """A change whose answer was lost, resent with its token: True again, one account, markers consistent."""
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    reg = u.register(client, tconn.table_name, email=ADA, username="ada")
    u.lose_next_response(client)
    with pytest.raises(ConnectionClosedError):
        u.change_email(client, tconn.table_name, reg.account_id, "ada@babbage.io", token="move-ada-1")
    assert u.change_email(client, tconn.table_name, reg.account_id, "ada@babbage.io", token="move-ada-1") is True
    assert u.get_account(client, tconn.table_name, reg.account_id)["email"] == "ada@babbage.io"  # type: ignore[index]
    assert u.audit(client, tconn.table_name).ok


def test_registry__actor_shape__same_as_flag_store(tconn: Connection) -> None:
    """UniqueRegistry.connect / with_client / register / change_email / delete, like FlagStore."""
    registry = u.UniqueRegistry.connect(tconn)
    other = registry.with_client(tconn.new_client())
    reg = other.register(email=ADA, username="ada")
    assert other.change_email(reg.account_id, "ada@babbage.io", token="t-1") is True
    assert registry.get(reg.account_id)["email"] == "ada@babbage.io"  # type: ignore[index]
    assert registry.delete(reg.account_id)["id"] == reg.account_id
    assert registry.audit().ok and registry.get(reg.account_id) is None
