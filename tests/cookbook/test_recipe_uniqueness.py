"""recipes/uniqueness.py, cancellation.py, conflicts.py: one account per email under every order and fault,
the taken field named from its slot, conflicts retried — and their broken variants caught."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.lab import recording
from labkit.patterns import uniqueness as uniq
from labkit.races import explore
from labkit.shared.backend import Connection
from labkit.shared.errors import LookAlikeValue
from labkit.shared.table import reset_table
from recipes.cancellation import (
    CHANGE_EMAIL_FIELDS,
    SIGN_UP_FIELDS,
    ValueTaken,
    raise_taken,
    reason_codes,
    taken_fields,
)
from recipes.conflicts import ConflictRetriesExhausted, is_conflict, retry_conflicts
from recipes.uniqueness import (
    LookAlike,
    change_email_request,
    delete_request,
    marker_delete,
    marker_put,
    normalise,
    read_account,
    register_request,
)
from tests.cookbook.exploration import FAULTS, Runs, outcome

EMAIL = "ada@lovelace.io"


def sign_up(
    client: Any,
    table: str,
    account_id: str,
    username: str,
    token: str,
    *,
    fields: Mapping[int, str] = SIGN_UP_FIELDS,
    attempts: int = 3,
) -> str:
    """What a service does with the recipes: send the request (conflicts retried), name a taken value."""
    request = register_request(table, account_id, EMAIL, username, token)
    try:
        retry_conflicts(lambda: client.transact_write_items(**request), attempts=attempts, base_delay=0.001)
    except ClientError as exc:
        raise_taken(exc, fields)
        raise
    return "created"


def two_sign_ups(conn: Connection, client: Any, signer: Callable[..., str]) -> Any:
    """A (ada) and B (countess) sign up with the same email at once."""
    table, runs = conn.table_name, Runs()

    def setup() -> None:
        runs.next()
        reset_table(conn)

    def actor(name: str, username: str) -> Callable[[], Any]:
        return lambda: outcome(
            lambda: signer(client, table, f"{name}-id", username, runs.token(name)),
            ValueTaken,
            ConflictRetriesExhausted,
        )

    def one_account_and_the_loser_told_email(res: Any) -> None:
        assert not res.errors, res.errors
        answers = sorted((str(r) if isinstance(r, Exception) else r) for r in res.results.values())
        assert answers == ["already taken: email", "created"], answers
        items = uniq.table_items(conn.client, table)
        assert int(items["PK"].str.startswith("ACCT#").sum()) == 1 and uniq.audit(conn.client, table).ok

    actors = {"A": actor("A", "ada"), "B": actor("B", "countess")}
    return explore(actors, conn=conn, setup=setup, invariant=one_account_and_the_loser_told_email, faults=FAULTS)


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_sign_up__two_at_once_every_order_and_fault__one_account_the_other_told_email(
    tconn: Connection, sdk: Any
) -> None:
    """Same email, every order, a lost answer (resent with the same token) or a conflict at each call."""
    result = two_sign_ups(tconn, sdk, sign_up)
    assert result.passed, result.summary()
    assert "transaction-conflict" in result.guarantee


def test_sign_up__slots_counted_from_one__names_the_wrong_field(tconn: Connection, sdk: Any) -> None:
    """Broken: reading CancellationReasons as 1-based (email at 2) misses the taken email at slot 1."""
    result = two_sign_ups(tconn, sdk, lambda *a: sign_up(*a, fields={2: "email", 3: "username"}))
    assert not result.passed and "[None, ConditionalCheckFailed, None]" in (result.message or ""), result.summary()


def test_sign_up__conflict_given_up_silently__caught(tconn: Connection, sdk: Any) -> None:
    """Broken (the old countess loop): one attempt, and a conflict swallowed as if signed up."""

    def swallows(client: Any, table: str, account_id: str, username: str, token: str) -> str:
        try:
            return sign_up(client, table, account_id, username, token, attempts=1)
        except ConflictRetriesExhausted:
            return "created"

    result = two_sign_ups(tconn, sdk, swallows)
    assert not result.passed and result.faults and "transaction-conflict" in result.faults[0], result.summary()


def test_reason_codes__slot_0_is_the_account__none_is_the_string_none(tconn: Connection) -> None:
    """The second sign-up for an email: reasons in request order from slot 0, "None" for a passing action."""
    client, table = tconn.client, tconn.table_name
    client.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(**register_request(table, "b1", EMAIL, "bob", str(uuid.uuid4())))
    assert reason_codes(cancelled.value) == ["None", "ConditionalCheckFailed", "None"]
    with pytest.raises(ValueTaken, match="already taken: email") as taken:
        raise_taken(cancelled.value)
    assert taken.value.fields == ["email"] and taken.value.__cause__ is cancelled.value


def test_is_conflict__both_names__and_not_a_refused_condition() -> None:
    """TransactionConflictException, or a cancellation with a TransactionConflict reason; nothing else."""

    def error(code: str, reasons: list[str] | None = None) -> ClientError:
        response: dict[str, Any] = {"Error": {"Code": code, "Message": "m"}}
        if reasons is not None:
            response["CancellationReasons"] = [{"Code": r} for r in reasons]
        return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]

    assert is_conflict(error("TransactionConflictException"))
    assert is_conflict(error("TransactionCanceledException", ["None", "TransactionConflict"]))
    assert not is_conflict(error("TransactionCanceledException", ["ConditionalCheckFailed", "None"]))
    assert not is_conflict(error("ConditionalCheckFailedException")) and not is_conflict(ValueError("x"))


def test_change_email_request__same_email__none__and_dynamodb_refuses_the_two_action_transaction(
    tconn: Connection,
) -> None:
    """Point 7: a new email that normalises to the old one is nothing to change; sent anyway, its Put and
    Delete name one item and DynamoDB answers ValidationException "Transaction request cannot include
    multiple operations on one item" (the TransactWriteItems rule: no two actions on one item)."""
    client: Any = tconn.client
    table = tconn.table_name
    client.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
    account = read_account(client, table, "a1")
    assert account is not None and change_email_request(table, account, normalise(" Ada@Lovelace.IO "), "t") is None
    # what the request would be without the early return: a Put and a Delete of one marker item
    same = [marker_put(table, "EMAIL", "email", EMAIL, "a1"), marker_delete(table, "EMAIL", EMAIL, "a1")]
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(TransactItems=same, ClientRequestToken=str(uuid.uuid4()))
    assert refused.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "Transaction request cannot include multiple operations on one item",
    }
    assert uniq.audit(client, table).ok


@pytest.mark.parametrize(
    ("account_id", "email", "username", "emails"),
    [("a1", "ada@lovelace.io", "ada", ["ada@babbage.io"]), ("ü-1", "zoë@école.fr", "zoë", ["zoe@ecole.fr", "z@x.io"])],
)
def test_recipes__register_change_delete__the_requests_labkit_sends(
    tconn: Connection, account_id: str, email: str, username: str, emails: list[str]
) -> None:
    """The recipes' TransactWriteItems equal labkit.patterns.uniqueness's, action by action, but the random token."""
    client, table = tconn.new_client(), tconn.table_name

    def with_recipes() -> None:
        client.transact_write_items(**register_request(table, account_id, email, username, str(uuid.uuid4())))
        for new in emails:
            change = change_email_request(table, read_account(client, table, account_id) or {}, new, str(uuid.uuid4()))
            assert change is not None
            client.transact_write_items(**change)
        client.transact_write_items(
            **delete_request(table, read_account(client, table, account_id) or {}, str(uuid.uuid4()))
        )

    def with_labkit() -> None:
        uniq.register(client, table, email=email, username=username, account_id=account_id)
        for new in emails:
            uniq.change_email(client, table, account_id, new)
        uniq.delete_account(client, table, account_id)

    sent = {}
    for name, lifecycle in (("recipes", with_recipes), ("labkit", with_labkit)):
        reset_table(tconn)
        with recording(client) as sent[name]:
            lifecycle()
        assert uniq.table_items(client, table).empty, f"{name}: the delete left items behind"
    assert len(sent["labkit"]) == 2 + len(emails) and sent["recipes"] == sent["labkit"]


def test_normalise__the_policy_labkit_applies__on_plain_values() -> None:
    """The recipe's normalise() gives labkit's spelling for values labkit accepts."""
    for raw in (" Ada@Lovelace.io", "ＡＤＡ@lovelace.io", "ZOË@École.fr", "ada\u00a0"):
        assert normalise(raw) == (uniq.normalise_email(raw) if "@" in raw else uniq.normalise_username(raw))


def test_register_request__values_as_typed__normalised_into_one_marker(tconn: Connection) -> None:
    """Point 8: `Ada@X.io`/`ADA` and `ada@x.io`/`ada` are one email and one username: the second sign-up,
    built from the values as typed, meets the first one's markers (slots 1 and 2 refused)."""
    client, table = tconn.client, tconn.table_name
    first = register_request(table, "a1", " Ada@X.io", "ADA", str(uuid.uuid4()))
    client.transact_write_items(**first)
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(**register_request(table, "b1", "ada@x.io", "ada", str(uuid.uuid4())))
    assert reason_codes(refused.value) == ["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]
    assert sorted(uniq.table_items(client, table)["PK"]) == ["ACCT#a1", "UNIQ#EMAIL#ada@x.io", "UNIQ#HANDLE#ada"]
    account = read_account(client, table, "a1")
    assert account is not None and (account["email"], account["username"]) == ({"S": "ada@x.io"}, {"S": "ada"})


def test_change_email_request__new_email_as_typed__normalised(tconn: Connection) -> None:
    """The new email is normalised: the old one typed differently is nothing to change; a new one becomes
    the marker of its normalised spelling."""
    client, table = tconn.client, tconn.table_name
    client.transact_write_items(**register_request(table, "a1", "ada@x.io", "ada", str(uuid.uuid4())))
    account = read_account(client, table, "a1") or {}
    assert change_email_request(table, account, " ADA@X.io ", "t") is None
    change = change_email_request(table, account, "Ada@Babbage.IO", str(uuid.uuid4()))
    assert change is not None
    client.transact_write_items(**change)
    assert sorted(uniq.table_items(client, table)["PK"]) == ["ACCT#a1", "UNIQ#EMAIL#ada@babbage.io", "UNIQ#HANDLE#ada"]


LOOK_ALIKES = {
    "zero-width space": "ada\u200b@x.io",
    "NUL": "ada\x00",
    "byte order mark": "\ufeffada",
    "soft hyphen": "a\u00adda",
    "right-to-left override": "ada\u202e",
    "Hangul filler": "ada\u3164",
    "Braille blank": "\u2800ada",
    "Cyrillic a among Latin": "p\u0430ypal@x.io",
    "Greek omicron among Latin": "g\u03bfogle",
}


@pytest.mark.parametrize("raw", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_normalise__look_alike__refused_as_labkit_refuses_it(raw: str) -> None:
    """The recipe refuses what labkit's normalise refuses (LookAlikeValue): invisible and control
    characters, blank letters, a word mixing Latin with Cyrillic or Greek; the request is never built."""
    with pytest.raises(LookAlikeValue):
        uniq.normalise(raw)
    with pytest.raises(LookAlike):
        normalise(raw)
    with pytest.raises(LookAlike):
        register_request("t", "a1", raw if "@" in raw else "ada@x.io", "ada" if "@" in raw else raw, "token")


def test_normalise__empty_after_trimming__refused() -> None:
    """An empty value (or only blanks) is no value: refused before it becomes a key, as labkit does."""
    for raw in ("", "   ", "\u00a0"):
        with pytest.raises(ValueError, match="empty"):
            normalise(raw)


def test_taken_fields__change_email_cancelled__change_mapping_names_the_email_sign_up_mapping_would_not(
    tconn: Connection,
) -> None:
    """The change transaction's slots are its own (0: the new email's marker, 1: the old marker's Delete,
    2: the account's Update): b1 changing to a1's email is cancelled at slot 0, which CHANGE_EMAIL_FIELDS
    names "email" — and the sign-up mapping ({1: email, 2: username}) would name nothing."""
    client, table = tconn.client, tconn.table_name
    client.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
    client.transact_write_items(**register_request(table, "b1", "bob@x.io", "bob", str(uuid.uuid4())))
    change = change_email_request(table, read_account(client, table, "b1") or {}, EMAIL, str(uuid.uuid4()))
    assert change is not None
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(**change)
    assert reason_codes(cancelled.value) == ["ConditionalCheckFailed", "None", "None"]
    assert taken_fields(cancelled.value, CHANGE_EMAIL_FIELDS) == ["email"]
    assert taken_fields(cancelled.value, SIGN_UP_FIELDS) == [], "the sign-up slots misread a change"


def test_taken_fields__change_email_after_another_tab_changed_it__nothing_taken(tconn: Connection) -> None:
    """Two tabs read the account; the first changes the email; the second's change is cancelled at slots 1
    (the old marker is gone) and 2 (the account no longer holds the old email): a changed account, not a
    taken value — CHANGE_EMAIL_FIELDS names nothing (read the account again and retry)."""
    client, table = tconn.client, tconn.table_name
    client.transact_write_items(**register_request(table, "a1", EMAIL, "ada", str(uuid.uuid4())))
    as_read = read_account(client, table, "a1") or {}
    first = change_email_request(table, as_read, "ada@babbage.io", str(uuid.uuid4()))
    second = change_email_request(table, as_read, "ada@analytical.io", str(uuid.uuid4()))
    assert first is not None and second is not None
    client.transact_write_items(**first)
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(**second)
    assert reason_codes(cancelled.value) == ["None", "ConditionalCheckFailed", "ConditionalCheckFailed"]
    assert taken_fields(cancelled.value, CHANGE_EMAIL_FIELDS) == []
