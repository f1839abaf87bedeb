"""change_* and delete_account are safe to retry with a pinned token after a lost answer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from labkit.patterns import uniqueness as u
from labkit.races import run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    ConnectionClosedError,
    NotFound,
    StaleAccount,
    ValidationError,
    ValueTaken,
)
from tests.patterns.signups import ADA, TENANT_FIELDS, accounts_with_email, counting_client, items, keys, stored

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def ada_and_a_client_losing_its_next_answer(tconn: Connection) -> tuple[DynamoDBClient, u.Registration]:
    """Ada registered, and a client that does not retry whose next answer is lost (its request applied)."""
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    reg = u.register(client, tconn.table_name, email=ADA, username="ada")
    u.lose_next_response(client)
    return client, reg


def test_delete_account__retried_with_token_after_lost_response__returns_account_not_not_found(
    tconn: Connection,
) -> None:
    """The delete was applied, its answer lost; the retry with the same token succeeds with the same account."""
    client, reg = ada_and_a_client_losing_its_next_answer(tconn)
    with pytest.raises(ConnectionClosedError):
        u.delete_account(client, tconn.table_name, reg.account_id, token="delete-ada-1")
    account = u.delete_account(client, tconn.table_name, reg.account_id, token="delete-ada-1")
    assert (account["id"], account["email"]) == (reg.account_id, ADA)
    assert u.table_items(client, tconn.table_name).empty


def test_delete_account__retried_without_token__not_found(tconn: Connection) -> None:
    """Without a pinned token a retry is a new request: the account is gone, NotFound says so."""
    client, reg = ada_and_a_client_losing_its_next_answer(tconn)
    with pytest.raises(ConnectionClosedError):
        u.delete_account(client, tconn.table_name, reg.account_id)
    with pytest.raises(NotFound):
        u.delete_account(client, tconn.table_name, reg.account_id)


def test_change_email__retried_with_token_after_lost_response__applied_once_returns_true(
    tconn: Connection,
) -> None:
    """A change whose answer was lost, resent with its token: True again, one account, markers consistent."""
    client, reg = ada_and_a_client_losing_its_next_answer(tconn)
    with pytest.raises(ConnectionClosedError):
        u.change_email(client, tconn.table_name, reg.account_id, "ada@babbage.io", token="move-ada-1")
    assert u.change_email(client, tconn.table_name, reg.account_id, "ada@babbage.io", token="move-ada-1") is True
    assert u.get_account(client, tconn.table_name, reg.account_id)["email"] == "ada@babbage.io"  # type: ignore[index]
    assert u.audit(client, tconn.table_name).ok


@pytest.mark.aws_verified
def test_change_email__free_value__moves_the_marker_and_updates_the_account(
    tconn: Connection,
) -> None:
    """New marker claimed, old marker released, account updated — together."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    assert u.change_email(tconn.client, tconn.table_name, reg.account_id, "Ada@Babbage.io") is True
    assert keys(tconn) == sorted([f"ACCT#{reg.account_id}", "UNIQ#EMAIL#ada@babbage.io", "UNIQ#HANDLE#ada"])
    assert accounts_with_email(tconn, "ada@babbage.io") == 1
    u.register(tconn.client, tconn.table_name, email=ADA, username="countess")  # old email is free again


def test_change_email__taken__raises_value_taken_and_changes_nothing(tconn: Connection) -> None:
    """The new value belongs to someone else: ValueTaken for email, both accounts untouched."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    before = items(tconn)
    with pytest.raises(ValueTaken) as info:
        u.change_email(tconn.client, tconn.table_name, a.account_id, "B@b.io")
    assert info.value.fields == {"email": "b@b.io"}
    assert info.value.reason_codes == ("ConditionalCheckFailed", "None", "None")
    assert items(tconn) == before


def test_change_email__same_normalised_value__is_a_no_op(tconn: Connection) -> None:
    """Changing to the value already held (after normalising) sends nothing and returns False."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    client, calls = counting_client(tconn)
    assert u.change_email(client, tconn.table_name, reg.account_id, " ADA@lovelace.io") is False
    assert calls == ["GetItem"]


def test_change_username__free_value__moves_the_handle_marker(tconn: Connection) -> None:
    """Usernames follow the same lifecycle as emails."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    assert u.change_username(tconn.client, tconn.table_name, reg.account_id, "Countess") is True
    assert keys(tconn) == sorted([f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#countess"])


def test_change_email__old_marker_missing__raises_stale_account(tconn: Connection) -> None:
    """If the old marker is not this account's, the guarded Delete cancels the whole change."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": f"UNIQ#EMAIL#{ADA}"}, "SK": {"S": "LOCK"}})
    with pytest.raises(StaleAccount, match="audit") as info:
        u.change_email(tconn.client, tconn.table_name, reg.account_id, "new@lovelace.io")
    assert info.value.reason_codes == ("None", "ConditionalCheckFailed", "None")
    assert "UNIQ#EMAIL#new@lovelace.io" not in keys(tconn)


def test_change_email__unknown_account__raises_not_found(tconn: Connection) -> None:
    """An id with no account is NotFound, not a silent no-op."""
    with pytest.raises(NotFound, match="does not exist"):
        u.change_email(tconn.client, tconn.table_name, "nobody", ADA)
    assert items(tconn) == []


def test_change_email__bad_email__raises_validation_error_before_any_call(
    tconn: Connection,
) -> None:
    """The new value is validated before the account is even read."""
    client, calls = counting_client(tconn)
    with pytest.raises(ValidationError):
        u.change_email(client, tconn.table_name, "someone", "not-an-email")
    assert calls == []


@pytest.mark.aws_verified
def test_delete_account__removes_account_and_all_its_markers(tconn: Connection) -> None:
    """Account and both markers go in one transaction; the values can be registered again."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    other = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    deleted = u.delete_account(tconn.client, tconn.table_name, reg.account_id)
    assert deleted["email"] == ADA
    assert keys(tconn) == sorted([f"ACCT#{other.account_id}", "UNIQ#EMAIL#b@b.io", "UNIQ#HANDLE#b"])
    u.register(tconn.client, tconn.table_name, email=ADA, username="ada")


def test_delete_account__marker_owned_by_someone_else__deletes_nothing(tconn: Connection) -> None:
    """A marker whose owner is not this account cancels the delete instead of stealing it."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    tconn.client.put_item(
        TableName=tconn.table_name,
        Item={"PK": {"S": "UNIQ#HANDLE#ada"}, "SK": {"S": "LOCK"}, "owner": {"S": "intruder"}},
    )
    before = items(tconn)
    with pytest.raises(StaleAccount) as info:
        u.delete_account(tconn.client, tconn.table_name, reg.account_id)
    assert info.value.reason_codes == ("None", "None", "ConditionalCheckFailed")
    assert items(tconn) == before


def test_change_email__two_accounts_race_for_one_email__one_wins_loser_keeps_old_marker(
    tconn: Connection,
) -> None:
    """Both read their account, then both transact: one moves, the other gets ValueTaken intact."""
    table = tconn.table_name
    a = u.register(tconn.client, table, email="a@a.io", username="a")
    b = u.register(tconn.client, table, email="b@b.io", username="b")
    res = run_interleaving(
        {
            "A": lambda c: u.change_email(c, table, a.account_id, "new@x.io"),
            "B": lambda c: u.change_email(c, table, b.account_id, "new@x.io"),
        },
        "ABAB",
        conn=tconn,
    )
    assert res.results == {"A": True}
    loser = res.errors["B"]
    assert isinstance(loser, ValueTaken) and loser.fields == {"email": "new@x.io"}
    by_key = {row["PK"]: row for row in items(tconn)}
    assert by_key["UNIQ#EMAIL#b@b.io"]["owner"] == b.account_id
    assert by_key[f"ACCT#{b.account_id}"]["email"] == "b@b.io"
    assert by_key["UNIQ#EMAIL#new@x.io"]["owner"] == a.account_id and "UNIQ#EMAIL#a@a.io" not in by_key


def test_change_value__part_of_a_composite__swaps_the_pair_marker_in_the_same_transaction(tconn: Connection) -> None:
    """Changing the email of a (tenant, email) account moves the pair's marker; the old one is gone."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="acme", email=ADA, username="ada")
    assert reg.change_email(a.account_id, "Ada@Babbage.io") is True
    assert stored(tconn, f"UNIQ#TENANT_EMAIL#acme#{ADA}") is None
    marker = stored(tconn, "UNIQ#TENANT_EMAIL#acme#ada@babbage.io")
    assert marker is not None and marker["owner"] == a.account_id
    assert marker["parts"] == {"tenant": "acme", "email": "ada@babbage.io"}
    assert reg.audit().ok


def test_change_value__pair_taken__value_taken_names_the_pair_nothing_changed(tconn: Connection) -> None:
    """Moving into a pair someone holds raises ValueTaken for tenant+email; both accounts unchanged."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    reg.register(tenant="acme", email=ADA, username="ada")
    b = reg.register(tenant="globex", email=ADA, username="bob")
    with pytest.raises(ValueTaken) as exc:
        reg.change(b.account_id, "tenant", "ACME")
    assert exc.value.fields == {"tenant+email": f"acme#{ADA}"}
    assert (reg.get(b.account_id) or {})["tenant"] == "globex" and reg.audit().ok


def test_delete_account__composite__releases_the_pair_marker(tconn: Connection) -> None:
    """Deleting the account deletes its pair marker too; the pair is free again."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="acme", email=ADA, username="ada")
    reg.delete(a.account_id)
    assert items(tconn) == []
    reg.register(tenant="acme", email=ADA, username="ada")
