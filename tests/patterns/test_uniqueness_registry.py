"""Registering: an account and a marker per unique value in one guarded transaction; retries are idempotent."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.patterns import uniqueness as u
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    ConnectionClosedError,
    IdempotencyMismatch,
    StaleAccount,
    ValidationError,
    ValueTaken,
)
from tests.patterns.signups import (
    ADA,
    BAD_INPUT,
    TENANT_FIELDS,
    accounts_with_email,
    counting_client,
    items,
    keys,
    stored,
    two_signups,
)


@pytest.mark.parametrize(("case", "kwargs", "message"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_register__bad_input__raises_validation_error_before_any_call(
    tconn: Connection, case: str, kwargs: dict[str, Any], message: str
) -> None:
    """Bad input is refused with a message naming the problem; no request is sent."""
    client, calls = counting_client(tconn)
    with pytest.raises(ValidationError, match=message):
        u.register(client, tconn.table_name, **kwargs)
    assert calls == [] and items(tconn) == []


def test_register__same_field_twice__raises_validation_error(tconn: Connection) -> None:
    """A field given twice (pairs, or pairs and keyword) is refused, nothing written."""
    client, calls = counting_client(tconn)
    with pytest.raises(ValidationError, match="'email' given twice"):
        u.register(client, tconn.table_name, [("email", ADA), ("email", "b@b.io")], username="ada")
    with pytest.raises(ValidationError, match="'email' given twice"):
        u.register(client, tconn.table_name, {"email": ADA}, email="b@b.io", username="ada")
    assert calls == []


@pytest.mark.aws_verified
def test_register__new_values__writes_account_and_one_marker_per_value(tconn: Connection) -> None:
    """One account item plus UNIQ#EMAIL# and UNIQ#HANDLE# markers owned by it."""
    reg = u.register(tconn.client, tconn.table_name, email=" Ada@Lovelace.io", username="Ada")
    by_key = {row["PK"]: row for row in items(tconn)}
    assert set(by_key) == {f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"}
    assert by_key[f"ACCT#{reg.account_id}"]["email"] == ADA
    assert by_key[f"UNIQ#EMAIL#{ADA}"]["owner"] == reg.account_id
    assert by_key["UNIQ#HANDLE#ada"]["owner"] == reg.account_id
    assert {row["SK"] for row in by_key.values()} == {"PROFILE", "LOCK"}


def test_register__account_id__is_generated_and_never_the_email(tconn: Connection) -> None:
    """Two registrations get two different generated ids, neither containing the email."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    assert a.account_id != b.account_id and "@" not in a.account_id + b.account_id


@pytest.mark.aws_verified
def test_register__email_taken__raises_value_taken_for_email(tconn: Connection) -> None:
    """Slot 1 (the email marker) fails: ValueTaken names email, keeps the ClientError as cause."""
    u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    before = keys(tconn)
    with pytest.raises(ValueTaken) as info:
        u.register(tconn.client, tconn.table_name, email="ADA@lovelace.io", username="countess")
    assert info.value.fields == {"email": ADA}
    assert info.value.reason_codes == ("None", "ConditionalCheckFailed", "None")
    assert info.value.code == "TransactionCanceledException"
    assert isinstance(info.value.__cause__, ClientError)
    assert keys(tconn) == before


def test_register__username_taken__raises_value_taken_for_username(tconn: Connection) -> None:
    """Slot 2 (the handle marker) fails: ValueTaken names username only."""
    u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    with pytest.raises(ValueTaken) as info:
        u.register(tconn.client, tconn.table_name, email="other@lovelace.io", username=" ADA ")
    assert info.value.fields == {"username": "ada"}
    assert info.value.reason_codes == ("None", "None", "ConditionalCheckFailed")


@pytest.mark.aws_verified
def test_register__both_taken__raises_value_taken_for_both(tconn: Connection) -> None:
    """Both markers fail: ValueTaken names both fields in request order."""
    u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    with pytest.raises(ValueTaken) as info:
        u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    assert list(info.value.fields) == ["email", "username"]


def test_register__check_first_and_value_taken__raises_before_writing(tconn: Connection) -> None:
    """check_first reads the markers and refuses a taken value without sending the transaction."""
    u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    client, calls = counting_client(tconn)
    with pytest.raises(ValueTaken) as info:
        u.register(client, tconn.table_name, email=ADA, username="ada", check_first=True)
    assert info.value.fields == {"email": ADA, "username": "ada"}
    assert calls == ["BatchGetItem"]


def test_register__custom_fields__uses_configured_namespaces(tconn: Connection) -> None:
    """A field -> namespace map decides which attributes are unique and their marker keys."""
    fields = {"email": "EMAIL", "phone": "PHONE"}
    reg = u.register(tconn.client, tconn.table_name, email=ADA, phone="+44 20 7946 0000", fields=fields)
    assert keys(tconn) == sorted([f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#PHONE#+44 20 7946 0000"])
    with pytest.raises(ValueTaken) as info:
        u.register(tconn.client, tconn.table_name, email="b@b.io", phone="+44 20 7946 0000", fields=fields)
    assert info.value.fields == {"phone": "+44 20 7946 0000"}


def test_register__existing_account_id__raises_stale_account(tconn: Connection) -> None:
    """Slot 0 (the account) failing means the id exists: a conflict, not a taken value."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    with pytest.raises(StaleAccount, match="already exists") as info:
        u.register(tconn.client, tconn.table_name, email="b@b.io", username="b", account_id=reg.account_id)
    assert info.value.reason_codes[0] == "ConditionalCheckFailed"


def test_submit__resent_after_lost_response__creates_one_account(tconn: Connection) -> None:
    """The first send is applied but its answer lost; a resend of it applies nothing more."""
    client = tconn.new_client()
    reg = u.prepare_registration(email=ADA, username="ada")
    u.lose_next_response(client)
    with pytest.raises(ConnectionClosedError):
        u.submit(client, tconn.table_name, reg)
    assert u.submit(client, tconn.table_name, reg) is reg
    assert keys(tconn) == sorted([f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"])


def test_register__resent_with_same_id_and_token__creates_one_account(tconn: Connection) -> None:
    """register(..., account_id=, token=) with the same values is the same request: applied once."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(
        tconn.client,
        tconn.table_name,
        email=ADA,
        username="ada",
        account_id=a.account_id,
        token=a.token,
    )
    assert b.request(tconn.table_name) == a.request(tconn.table_name)
    assert accounts_with_email(tconn, ADA) == 1


def test_submit__same_token_different_request__raises_idempotency_mismatch(
    tconn: Connection,
) -> None:
    """Reusing a token for another sign-up is refused, and the second sign-up writes nothing."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    with pytest.raises(IdempotencyMismatch) as info:
        u.register(tconn.client, tconn.table_name, email="b@b.io", username="b", token=a.token)
    assert info.value.code == "IdempotentParameterMismatchException"
    assert isinstance(info.value.__cause__, ClientError)
    assert accounts_with_email(tconn, "b@b.io") == 0


def test_registration__without_token__gets_a_fresh_uuid_token() -> None:
    """Each prepared registration carries its own 36-character token."""
    a = u.prepare_registration(email=ADA, username="ada")
    b = u.prepare_registration(email=ADA, username="ada")
    assert a.token != b.token and len(a.token) == 36 and a.request("t")["ClientRequestToken"] == a.token


@pytest.mark.aws_verified
def test_register__sixteen_threads_same_email__one_winner_fifteen_value_taken(
    tconn: Connection,
) -> None:
    """16 sign-ups for one email, each on its own client: one account, 15 ValueTaken(email)."""
    n = 16
    clients = [tconn.new_client() for _ in range(n)]
    start = threading.Barrier(n)
    won: list[str] = []
    taken: list[ValueTaken] = []
    other: list[BaseException] = []
    lock = threading.Lock()

    def sign_up(i: int) -> None:
        start.wait()
        try:
            reg = u.register(clients[i], tconn.table_name, email=ADA, username=f"user{i}")
        except ValueTaken as exc:
            with lock:
                taken.append(exc)
        except BaseException as exc:
            with lock:
                other.append(exc)
        else:
            with lock:
                won.append(reg.account_id)

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert other == [] and len(won) == 1 and len(taken) == n - 1
    assert all(exc.fields == {"email": ADA} for exc in taken)
    markers = [row for row in items(tconn) if str(row["PK"]).startswith("UNIQ#")]
    assert len(markers) == 2 and {m["owner"] for m in markers} == {won[0]}
    assert accounts_with_email(tconn, ADA) == 1
    assert u.audit(tconn.client, tconn.table_name).orphan_markers.empty


@pytest.mark.aws_verified
def test_register_transactional__all_orders__no_duplicates(tconn: Connection) -> None:
    """The same six orders with markers in one guarded transaction: always exactly one account."""
    table = two_signups(
        tconn,
        lambda c, name: u.register(c, tconn.table_name, email=ADA, username=name, check_first=True),
    )
    assert table.attrs["calls"] == {"A": 2, "B": 2}
    assert len(table) == 6 and (table["accounts"] == 1).all()


def test_register__composite_field__one_marker_keyed_by_both_with_owner_and_parts(tconn: Connection) -> None:
    """UNIQUE(tenant, email): one marker UNIQ#TENANT_EMAIL#<tenant>#<email> recording owner and parts."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    a = reg.register(tenant="Acme", email="Ada@Lovelace.io", username="ada")
    marker = stored(tconn, f"UNIQ#TENANT_EMAIL#acme#{ADA}")
    assert marker == {
        "PK": f"UNIQ#TENANT_EMAIL#acme#{ADA}",
        "SK": "LOCK",
        "owner": a.account_id,
        "field": "tenant+email",
        "value": f"acme#{ADA}",
        "parts": {"tenant": "acme", "email": ADA},
    }
    assert keys(tconn) == sorted([f"ACCT#{a.account_id}", f"UNIQ#TENANT_EMAIL#acme#{ADA}", "UNIQ#HANDLE#ada"])


def test_register__same_pair_again__value_taken_names_the_pair(tconn: Connection) -> None:
    """The same (tenant, email) is taken; the same email in another tenant is not."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    reg.register(tenant="acme", email=ADA, username="ada")
    reg.register(tenant="globex", email=ADA, username="ada-globex")
    with pytest.raises(ValueTaken) as exc:
        reg.register(tenant="ACME", email="ada@LOVELACE.io", username="ada2")
    assert exc.value.fields == {"tenant+email": f"acme#{ADA}"}
    assert exc.value.reason_codes == ("None", "None", "ConditionalCheckFailed")
    assert accounts_with_email(tconn, ADA) == 2


def test_register__hash_in_email_local_part__pairs_stay_distinct(tconn: Connection) -> None:
    """('a#b', 'c@x.io') and ('a', 'b#c@x.io') are different pairs: the '#' inside a part is escaped."""
    reg = u.UniqueRegistry.connect(tconn, fields=TENANT_FIELDS)
    reg.register(tenant="a#b", email="c@x.io", username="one")
    reg.register(tenant="a", email="b#c@x.io", username="two")
    assert [k for k in keys(tconn) if k.startswith("UNIQ#TENANT_EMAIL#")] == [
        "UNIQ#TENANT_EMAIL#a#b\\#c@x.io",
        "UNIQ#TENANT_EMAIL#a\\#b#c@x.io",
    ]


def test_register__composite_part_missing__validation_error_nothing_written(tconn: Connection) -> None:
    """Every attribute of a composite must be given."""
    with pytest.raises(ValidationError, match="missing tenant"):
        u.register(tconn.client, tconn.table_name, email=ADA, username="ada", fields=TENANT_FIELDS)
    assert items(tconn) == []
