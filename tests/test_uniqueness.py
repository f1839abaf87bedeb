"""Uniqueness across several attributes: marker items written in the account's transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit import uniqueness as u
from labkit.backend import Connection
from labkit.errors import (
    ConflictError,
    ConnectionClosedError,
    DynamoError,
    IdempotencyMismatch,
    NotFound,
    StaleAccount,
    TransactionCancelled,
    ValidationError,
    ValueTaken,
)
from labkit.races import all_interleavings, run_interleaving

ADA = "ada@lovelace.io"


def items(tconn: Connection) -> list[dict[str, Any]]:
    """Every item in the test table, plain values, sorted by key."""
    return u.table_items(tconn.client, tconn.table_name).to_dict("records")  # type: ignore[no-any-return]


def keys(tconn: Connection) -> list[str]:
    return sorted(str(row["PK"]) for row in items(tconn))


def accounts_with_email(tconn: Connection, email: str) -> int:
    return sum(1 for row in items(tconn) if str(row["PK"]).startswith("ACCT#") and row.get("email") == email)


def counting_client(tconn: Connection) -> tuple[Any, list[str]]:
    """A client that records every DynamoDB call it makes."""
    client = tconn.new_client()
    calls: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    return client, calls


# --- normalisation and validation ---


def test_normalise_email__case_and_spaces__give_one_key() -> None:
    """Ada@Lovelace.io and ' ada@lovelace.io ' are the same address, so the same marker key."""
    assert u.normalise_email(" Ada@Lovelace.IO ") == u.normalise_email(ADA) == ADA


def test_normalise_username__fullwidth_and_case__fold_to_ascii() -> None:
    """NFKC folds fullwidth letters; case-folding folds case: 'ＡＤＡ' is 'ada'."""
    assert u.normalise_username(" ＡＤＡ ") == "ada"


BAD_INPUT: list[tuple[str, dict[str, Any], str]] = [
    ("empty email", {"email": "  ", "username": "ada"}, "email is empty"),
    ("no @", {"email": "ada.lovelace.io", "username": "ada"}, "exactly one '@'"),
    ("two @", {"email": "ada@@lovelace.io", "username": "ada"}, "exactly one '@'"),
    ("no local part", {"email": "@lovelace.io", "username": "ada"}, "nothing before the '@'"),
    ("domain without dot", {"email": "ada@lovelace", "username": "ada"}, "domain with a dot"),
    ("domain dot at end", {"email": "ada@lovelace.", "username": "ada"}, "domain with a dot"),
    ("whitespace inside", {"email": "ada @lovelace.io", "username": "ada"}, "whitespace"),
    ("email over 254", {"email": "a" * 250 + "@b.io", "username": "ada"}, "over the 254"),
    ("empty username", {"email": ADA, "username": " "}, "username is empty"),
    ("username too long for a key", {"email": ADA, "username": "x" * 2040}, "2,048-byte"),
    ("multibyte username too long", {"email": ADA, "username": "é" * 1020}, "2,048-byte"),
    (
        "unknown field",
        {"email": ADA, "username": "ada", "nick": "a"},
        "unknown unique field 'nick'",
    ),
    ("missing field", {"email": ADA}, "missing username"),
    ("token too long", {"email": ADA, "username": "ada", "token": "t" * 37}, "1-36 characters"),
    (
        "attributes set a key",
        {"email": ADA, "username": "ada", "attributes": {"PK": "x"}},
        "may not set PK",
    ),
]


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


def test_check_fields__shared_namespace__raises_validation_error() -> None:
    """Two fields cannot share a namespace: their markers would collide with each other."""
    with pytest.raises(ValidationError, match="share namespace 'EMAIL'"):
        u.check_fields({"email": "EMAIL", "backup_email": "EMAIL"})


# --- register ---


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


# --- reading the error: reasons DynamoDB documents but the embedded endpoint cannot produce ---


def cancelled(*codes: str) -> ClientError:
    """A TransactionCanceledException shaped as DynamoDB documents it."""
    reasons = [{"Code": c, "Message": f"{c} message"} if c != "None" else {"Code": c} for c in codes]
    return ClientError(
        {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": f"Transaction cancelled, please refer cancellation reasons for "
                f"specific reasons [{', '.join(codes)}]",
            },
            "CancellationReasons": reasons,
        },  # type: ignore[typeddict-unknown-key]
        "TransactWriteItems",
    )


def slots() -> list[Any]:
    return u.prepare_registration(email=ADA, username="ada")._slots()


def test_translate_error__transaction_conflict__is_a_retryable_conflict_error() -> None:
    """TransactionConflict in any slot -> ConflictError (retryable) with reasons in order."""
    err = u.translate_error(cancelled("None", "TransactionConflict", "None"), slots(), "registering")
    assert isinstance(err, ConflictError) and not isinstance(err, TransactionCancelled)
    assert not isinstance(err, ValueTaken)
    assert err.reason_codes == ("None", "TransactionConflict", "None")


def test_translate_error__validation_reason__is_transaction_cancelled_not_value_taken() -> None:
    """A ValidationError reason is neither a taken value nor a conflict."""
    err = u.translate_error(cancelled("ValidationError", "None", "None"), slots(), "registering")
    assert type(err) is TransactionCancelled and "invalid" in str(err)


def test_translate_error__reasons_only_in_message__are_parsed_in_order() -> None:
    """Without a CancellationReasons field, the bracketed list in the message is used."""
    exc = cancelled("None", "None", "ConditionalCheckFailed")
    del exc.response["CancellationReasons"]  # type: ignore[typeddict-item]
    err = u.translate_error(exc, slots(), "registering")
    assert isinstance(err, ValueTaken) and err.fields == {"username": "ada"}


def test_translate_error__other_code__is_dynamo_error_with_code() -> None:
    """Any other DynamoDB error keeps its code."""
    exc = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "TransactWriteItems")
    err = u.translate_error(exc, [], "registering")
    assert isinstance(err, DynamoError) and err.code == "ThrottlingException"


# --- idempotent retry ---


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


# --- lifecycle ---


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


# --- races ---


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


def two_signups(tconn: Connection, sign_up: Callable[[Any, str], Any]) -> Any:
    """All six orders of two sign-ups for ada@lovelace.io; column duplicate per order."""
    table = tconn.table_name

    def setup() -> None:
        for row in items(tconn):
            tconn.client.delete_item(TableName=table, Key={"PK": {"S": row["PK"]}, "SK": {"S": row["SK"]}})

    return all_interleavings(
        {"A": lambda c: sign_up(c, "ada"), "B": lambda c: sign_up(c, "countess")},
        conn=tconn,
        setup=setup,
        outcome=lambda res: {"accounts": accounts_with_email(tconn, ADA)},
    )


@pytest.mark.aws_verified
@pytest.mark.parametrize("read", ["index", "scan"])
def test_register_check_then_write__all_orders__duplicates_in_four_of_six(tconn: Connection, read: str) -> None:
    """Read-then-write: every order where both reads precede both writes gives two accounts."""
    table = two_signups(
        tconn,
        lambda c, name: u.register_check_then_write(c, tconn.table_name, email=ADA, username=name, read=read),  # type: ignore[arg-type]
    )
    duplicated = set(table.loc[table["accounts"] > 1, "order"])
    assert duplicated == {"A B A B", "A B B A", "B A A B", "B A B A"}
    assert len(table) == 6 and (table["accounts"] >= 1).all()


@pytest.mark.aws_verified
def test_register_transactional__all_orders__no_duplicates(tconn: Connection) -> None:
    """The same six orders with markers in one guarded transaction: always exactly one account."""
    table = two_signups(
        tconn,
        lambda c, name: u.register(c, tconn.table_name, email=ADA, username=name, check_first=True),
    )
    assert table.attrs["calls"] == {"A": 2, "B": 2}
    assert len(table) == 6 and (table["accounts"] == 1).all()


# --- inspect and the article's JSON ---


def test_account_items__shows_the_account_and_its_markers_side_by_side(tconn: Connection) -> None:
    """Three rows: the account and one present marker per value, owner = the account id."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    frame = u.account_items(tconn.client, tconn.table_name, reg.account_id)
    assert list(frame["PK"]) == [f"ACCT#{reg.account_id}", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    assert list(frame["owner"])[1:] == [reg.account_id, reg.account_id] and frame["present"].all()


def test_account_items__missing_marker__shows_present_false(tconn: Connection) -> None:
    """A marker lost by a bad delete shows up as a row with present=False."""
    reg = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": "UNIQ#HANDLE#ada"}, "SK": {"S": "LOCK"}})
    frame = u.account_items(tconn.client, tconn.table_name, reg.account_id)
    assert list(frame["present"]) == [True, True, False]


@pytest.mark.aws_verified
def test_seed_transaction__sent_as_written__writes_its_three_items(tconn: Connection) -> None:
    """The article's JSON (table name substituted) works; sending it again is cancelled."""
    u.send_seed_transaction(tconn.client, tconn.table_name)
    assert keys(tconn) == ["ACCT#a1f9c3", f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    with pytest.raises(StaleAccount) as info:
        u.send_seed_transaction(tconn.client, tconn.table_name)
    assert info.value.reason_codes == ("ConditionalCheckFailed",) * 3


def test_seed_transaction__table_name__is_substituted_everywhere() -> None:
    """Every action targets the given table; the rest is the article's request unchanged."""
    request = u.seed_transaction("labkit-x")
    assert [next(iter(a.values()))["TableName"] for a in request["TransactItems"]] == ["labkit-x"] * 3
    assert request["TransactItems"][1]["Put"]["Item"]["PK"] == {"S": f"UNIQ#EMAIL#{ADA}"}


# --- audit and repair ---


def drop(tconn: Connection, pk: str, sk: str) -> None:
    """Delete one item behind labkit's back (the bug the audit exists for)."""
    tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})


def test_audit__healthy_table__finds_nothing(tconn: Connection) -> None:
    """Registered, changed and deleted accounts leave no finding."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    u.change_email(tconn.client, tconn.table_name, a.account_id, "new@lovelace.io")
    u.delete_account(tconn.client, tconn.table_name, b.account_id)
    report = u.audit(tconn.client, tconn.table_name)
    assert report.ok and report.findings.empty and report.summary() == "audit: no findings"


def test_audit__account_deleted_without_its_markers__finds_two_orphans(tconn: Connection) -> None:
    """Deleting only the account strands both markers; the audit names them."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    report = u.audit(tconn.client, tconn.table_name)
    assert not report.ok
    assert list(report.orphan_markers["marker"]) == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]


def test_audit__marker_deleted__finds_missing_marker(tconn: Connection) -> None:
    """An account whose value has no marker is reported as missing_marker."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    drop(tconn, "UNIQ#HANDLE#ada", "LOCK")
    report = u.audit(tconn.client, tconn.table_name)
    assert list(report.missing_markers["account"]) == [f"ACCT#{a.account_id}"]
    assert list(report.missing_markers["attribute"]) == ["username"]


def test_repair__orphan_and_missing_markers__fixes_both(tconn: Connection) -> None:
    """Orphans are deleted, missing markers created; afterwards the audit is clean."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    b = u.register(tconn.client, tconn.table_name, email="b@b.io", username="b")
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    drop(tconn, "UNIQ#EMAIL#b@b.io", "LOCK")
    done = u.repair(tconn.client, tconn.table_name)
    assert done.deleted == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"]
    assert done.created == ["UNIQ#EMAIL#b@b.io"] and done.conflicts == []
    assert u.audit(tconn.client, tconn.table_name).ok
    assert keys(tconn) == sorted([f"ACCT#{b.account_id}", "UNIQ#EMAIL#b@b.io", "UNIQ#HANDLE#b"])


def test_repair__orphan_whose_owner_took_the_value_back__is_not_deleted(tconn: Connection) -> None:
    """A stale report cannot delete a marker its owner holds again: the guard refuses."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    account = u.get_account(tconn.client, tconn.table_name, a.account_id)
    drop(tconn, f"ACCT#{a.account_id}", "PROFILE")
    stale = u.audit(tconn.client, tconn.table_name)
    tconn.client.put_item(TableName=tconn.table_name, Item={k: {"S": str(v)} for k, v in (account or {}).items()})
    done = u.repair(tconn.client, tconn.table_name, stale)
    assert done.deleted == [] and len(done.conflicts) == 2
    assert u.audit(tconn.client, tconn.table_name).ok


def test_repair__missing_marker_held_by_another__reports_and_does_not_overwrite(tconn: Connection) -> None:
    """Two accounts on one email (check-then-write): the marker stays with its owner, a conflict is reported."""
    a = u.register(tconn.client, tconn.table_name, email=ADA, username="ada")
    dup = u.register_check_then_write(tconn.client, tconn.table_name, email="x@x.io", username="ada2")
    tconn.client.update_item(
        TableName=tconn.table_name,
        Key={"PK": {"S": f"ACCT#{dup}"}, "SK": {"S": "PROFILE"}},
        UpdateExpression="SET email = :e",
        ExpressionAttributeValues={":e": {"S": ADA}},
    )
    report = u.audit(tconn.client, tconn.table_name)
    done = u.repair(tconn.client, tconn.table_name, report)
    assert set(report.findings["kind"]) >= {"several_owners", "missing_marker"}
    assert f"UNIQ#EMAIL#{ADA}" not in done.created
    assert any("held by" in c for c in done.conflicts) and any("not overwritten" in c for c in done.conflicts)
    assert {row["PK"]: row for row in items(tconn)}[f"UNIQ#EMAIL#{ADA}"]["owner"] == a.account_id


def test_repair__seed_locks_without_owner__are_given_to_their_account(tconn: Connection) -> None:
    """The article's locks carry no owner; repair adopts them instead of deleting and re-creating."""
    u.send_seed_transaction(tconn.client, tconn.table_name)
    assert {"orphan_marker", "missing_marker"} <= set(u.audit(tconn.client, tconn.table_name).findings["kind"])
    done = u.repair(tconn.client, tconn.table_name)
    assert done.adopted == [f"UNIQ#EMAIL#{ADA}", "UNIQ#HANDLE#ada"] and done.deleted == []
    assert u.audit(tconn.client, tconn.table_name).ok
