"""The plain boto3 recipes the lessons teach are the requests labkit sends, and they work as shown.

The recipes are read from the lesson sources (lessons/*.md) — the very cells a reader copies — and
run against a fresh table; labkit's own requests are recorded with :func:`labkit.lab.recording`.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from labkit import uniqueness as uniq
from labkit.backend import Connection
from labkit.lab import recording
from labkit.table import reset_table

LESSONS = Path(__file__).resolve().parents[2] / "lessons"


def recipes(lesson: str, *names: str) -> dict[str, Any]:
    """Run the code cells of ``lessons/<lesson>.md`` that define ``names``; return what they define."""
    cells = re.findall(r"```\{code-cell\}\n(.*?)```", (LESSONS / f"{lesson}.md").read_text(), re.S)
    namespace: dict[str, Any] = {}
    imports = "\n".join(line for line in cells[0].splitlines() if line.startswith(("import ", "from ")))
    exec(imports, namespace)  # the lesson's first cell imports what its recipes use (json, botocore's errors)
    for name in names:
        [cell] = [c for c in cells if re.search(rf"^def {name}\(", c, re.M)]
        exec(compile(cell, f"lessons/{lesson}.md", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def lesson_02() -> dict[str, Any]:
    return recipes("02_uniqueness", "register_request", "change_email_request", "delete_request")


def read_account(client: Any, table: str, account_id: str) -> dict[str, Any]:
    key = {"PK": {"S": f"ACCT#{account_id}"}, "SK": {"S": "PROFILE"}}
    item: dict[str, Any] = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    return item


@pytest.mark.parametrize(
    ("account_id", "email", "username", "emails"),
    [
        ("a1", "ada@lovelace.io", "ada", ["ada@babbage.io"]),
        ("3f9c", "bob.o'neil+x@example.co.uk", "bob_o", ["b@x.io", "c@y.io"]),
        ("ü-1", "zoë@école.fr", "zoë", ["zoe@ecole.fr"]),
    ],
)
def test_lesson_02_recipes__register_change_delete__the_requests_labkit_sends(
    tconn: Connection, lesson_02: dict[str, Any], account_id: str, email: str, username: str, emails: list[str]
) -> None:
    """Register, change the email (each change reads the account first), delete: the recipes' three (or
    more) TransactWriteItems equal labkit.uniqueness's, action by action, but for the random token."""
    client, table = tconn.new_client(), tconn.table_name

    def with_recipes() -> None:
        client.transact_write_items(
            **lesson_02["register_request"](table, account_id, email, username, str(uuid.uuid4()))
        )
        for new in emails:
            account = read_account(client, table, account_id)
            client.transact_write_items(**lesson_02["change_email_request"](table, account, new, str(uuid.uuid4())))
        client.transact_write_items(
            **lesson_02["delete_request"](table, read_account(client, table, account_id), str(uuid.uuid4()))
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
    assert len(sent["labkit"]) == 2 + len(emails)
    assert sent["recipes"] == sent["labkit"]


def test_lesson_02_recipes__taken_email_and_foreign_owner__cancelled_like_labkit(
    tconn: Connection, lesson_02: dict[str, Any]
) -> None:
    """The recipes' guards hold: a taken email cancels the sign-up at slot 1, and a delete built from a
    stale read (the email changed since) is cancelled on the account's guard, writing nothing."""
    client, table = tconn.new_client(), tconn.table_name
    client.transact_write_items(**lesson_02["register_request"](table, "a1", "ada@x.io", "ada", str(uuid.uuid4())))
    with pytest.raises(client.exceptions.TransactionCanceledException) as taken:
        client.transact_write_items(**lesson_02["register_request"](table, "b1", "ada@x.io", "bob", str(uuid.uuid4())))
    assert [r["Code"] for r in taken.value.response["CancellationReasons"]] == [
        "None",
        "ConditionalCheckFailed",
        "None",
    ]
    stale = read_account(client, table, "a1")
    uniq.change_email(client, table, "a1", "ada@y.io")
    with pytest.raises(client.exceptions.TransactionCanceledException) as refused:
        client.transact_write_items(**lesson_02["delete_request"](table, stale, str(uuid.uuid4())))
    assert refused.value.response["CancellationReasons"][0]["Code"] == "ConditionalCheckFailed"
    assert uniq.audit(client, table).ok and uniq.get_account(client, table, "a1") is not None


@pytest.fixture(scope="module")
def lesson_04() -> dict[str, Any]:
    return recipes("04_faults_and_retries", "enqueue", "send_pending")


def test_lesson_04_outbox__answer_lost_then_the_process_dies__a_new_process_resends_once(
    tconn: Connection, lesson_04: dict[str, Any]
) -> None:
    """The outbox recipe as lesson 04 shows it: the sign-up is persisted, sent, its answer lost, and the
    first client gives up; a fresh client resends the persisted request: one account, no outbox left."""
    from botocore.exceptions import ReadTimeoutError

    from labkit.faults import inject

    table = tconn.table_name
    signup = uniq.prepare_registration(email="ada@x.io", username="ada")
    lesson_04["enqueue"](tconn.client, table, "signup-ada", signup.request(table))
    dying = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    inject(dying, ["2: lose-response"])
    with pytest.raises(ReadTimeoutError):
        lesson_04["send_pending"](dying, table, "signup-ada", attempts=1)
    assert uniq.get_account(tconn.client, table, signup.account_id) is not None  # applied, answer lost
    lesson_04["send_pending"](tconn.new_client(), table, "signup-ada")
    items = uniq.table_items(tconn.client, table)
    assert sorted(items["PK"]) == ["ACCT#" + signup.account_id, "UNIQ#EMAIL#ada@x.io", "UNIQ#HANDLE#ada"]
    assert uniq.audit(tconn.client, table).ok


def test_lesson_04_outbox__a_change_built_from_the_read__resent_after_a_restart_reports_success(
    tconn: Connection, lesson_02: dict[str, Any], lesson_04: dict[str, Any]
) -> None:
    """ "A change or a delete works the same": lesson 02's change request, built from the read and
    persisted, is resent by a new process after a lost answer and answered as a success, applied once."""
    from labkit.faults import inject

    client, table = tconn.new_client(), tconn.table_name
    uniq.register(client, table, email="ada@x.io", username="ada", account_id="a1")
    change = lesson_02["change_email_request"](table, read_account(client, table, "a1"), "ada@y.io", str(uuid.uuid4()))
    lesson_04["enqueue"](client, table, "change-a1", change)
    dying = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    inject(dying, ["2: lose-response"])
    with pytest.raises(Exception, match="Read timeout"):
        lesson_04["send_pending"](dying, table, "change-a1", attempts=1)
    lesson_04["send_pending"](tconn.new_client(), table, "change-a1")  # no cancellation: the token is known
    assert uniq.get_account(client, table, "a1")["email"] == "ada@y.io"  # type: ignore[index]
    assert uniq.audit(client, table).ok and not uniq.table_items(client, table)["PK"].str.startswith("OUTBOX#").any()
