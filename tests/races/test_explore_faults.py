"""explore(..., faults=...): each order also with one fault at each call point of each actor.

A lost response (``lose-response``: applied, answer lost) and a ``TransactionConflict``
(``transaction-conflict``) at every call point find the retry that is not idempotent — a sign-up
that makes a new ClientRequestToken on retry — which no interleaving alone shows; the one that
pins its token passes. The counterexample names the order and the fault and replays exactly.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from labkit.races import Interleaving, explore, run_interleaving
from labkit.races.scenarios import EXPLORE_FAULTS, fault_scenarios
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError

FAULTS = ["lose-response", "transaction-conflict"]


def sign_up(client: Any, table: str, email: str, user: str, *, pin_token: bool) -> str:
    """The user's item and the email's marker in one transaction; retried when the answer is lost."""
    items = [
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": {"S": f"USER#{user}"}, "SK": {"S": "PROFILE"}, "email": {"S": email}},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
        {
            "Put": {
                "TableName": table,
                "Item": {"PK": {"S": f"EMAIL#{email}"}, "SK": {"S": "MARKER"}, "user": {"S": user}},
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        },
    ]
    token = str(uuid.uuid4())
    for _ in range(3):
        try:
            client.transact_write_items(TransactItems=items, ClientRequestToken=token)
            return "created"
        except (ReadTimeoutError, ConnectionClosedError):
            pass  # the answer was lost: send it again
        except ClientError as exc:
            codes = [r["Code"] for r in exc.response.get("CancellationReasons", [])]
            if "TransactionConflict" not in codes:
                return "email taken"
        if not pin_token:
            token = str(uuid.uuid4())  # the bug: a new request, not the same one again
    return "gave up"


def sign_ups(conn: Connection, pin_token: bool) -> dict[str, Callable[[Any], str]]:
    table = conn.table_name
    return {
        "A": lambda client: sign_up(client, table, "ann@example.com", "ann", pin_token=pin_token),
        "B": lambda client: sign_up(client, table, "bob@example.com", "bob", pin_token=pin_token),
    }


def empty_table(conn: Connection) -> Callable[[], None]:
    def setup() -> None:
        for pk, sk in [("USER#ann", "PROFILE"), ("EMAIL#ann@example.com", "MARKER")] + [
            ("USER#bob", "PROFILE"),
            ("EMAIL#bob@example.com", "MARKER"),
        ]:
            conn.client.delete_item(TableName=conn.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})

    return setup


def everyone_created(res: Interleaving) -> None:
    if res.results != {"A": "created", "B": "created"}:
        raise AssertionError(f"the sign-ups answered {dict(sorted(res.results.items()))}")


def test_sign_up_new_token_on_retry__faults_find_it__interleavings_alone_do_not(tconn: Connection) -> None:
    """No order alone breaks it; a lost answer at A's call does: its retry is a new request, 'email taken'."""
    actors, setup = sign_ups(tconn, pin_token=False), empty_table(tconn)
    assert explore(actors, conn=tconn, setup=setup, invariant=everyone_created).passed
    result = explore(actors, conn=tconn, setup=setup, invariant=everyone_created, faults=FAULTS)
    assert not result.passed
    assert result.faults == ("A1: lose-response",)
    assert result.scenario == f"{result.counterexample!r} with A1: lose-response"
    assert result.message == "the sign-ups answered {'A': 'email taken', 'B': 'created'}"
    assert f"in {result.counterexample!r} with A1: lose-response: the sign-ups answered" in result.summary()
    assert (
        f"replay: run_interleaving(actors, {result.counterexample!r}, conn=conn, faults=['A1: lose-response'])"
        in result.summary()
    )
    assert result.interleaving is not None
    assert list(result.interleaving.history["injected"].fillna("")) == ["lose-response", "", ""]
    # replays exactly: the same calls, the same fault, the same answers
    setup()
    replay = run_interleaving(actors, result.counterexample or "", conn=tconn, faults=list(result.faults))
    assert replay.results == {"A": "email taken", "B": "created"}
    assert replay.turns == result.interleaving.turns


def test_sign_up_pinned_token__passes_every_order_with_every_fault(tconn: Connection) -> None:
    """Resending the same token is idempotent: DynamoDB answers the lost transaction's success again.

    Every schedule of every scenario: 2 without a fault, 3 with each fault (the retry is a call
    of its own, before or after the other sign-up): 14 runs. (Before, the dry run's 2 orders were
    run in each scenario, 10 runs, and the retry always went last: not every order.)
    """
    result = explore(
        sign_ups(tconn, pin_token=True), conn=tconn, setup=empty_table(tconn), invariant=everyone_created, faults=FAULTS
    )
    assert result.passed, result.summary()
    assert result.strategy == "exhaustive" and result.scenarios == 5 and result.runs == 2 + 4 * 3
    assert result.guarantee == (
        "all orders explored, with no fault and each of 4 faults "
        "(lose-response, transaction-conflict at 2 call points): 14 runs"
    )


def test_team_client_with_sdk_retries__lost_answer_of_a_conditional_put__the_sdks_resend_says_taken(
    tconn: Connection,
) -> None:
    """A team's own client: the lost answer meets botocore's resend, as in production — not idempotent for a Put."""
    users = (
        boto3.session.Session()
        .resource(
            "dynamodb",
            endpoint_url=tconn.endpoint_url,
            region_name=tconn.region,
            aws_access_key_id=C.LOCAL_ACCESS_KEY,
            aws_secret_access_key=C.LOCAL_SECRET_KEY,
        )
        .Table(tconn.table_name)
    )

    def claim(email: str) -> str:
        try:
            users.put_item(
                Item={"PK": f"EMAIL#{email}", "SK": "MARKER"}, ConditionExpression="attribute_not_exists(PK)"
            )
            return "created"
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return "email taken"

    result = explore(
        {"A": lambda: claim("ann@example.com"), "B": lambda: claim("bob@example.com")},
        conn=tconn,
        setup=empty_table(tconn),
        invariant=everyone_created,
        faults=["lose-response"],
    )
    assert not result.passed and result.faults == ("A1: lose-response",)
    assert result.interleaving is not None
    history = result.interleaving.history
    assert list(history["retries"]) == [1, 0] and list(history["outcome"]) == ["ConditionalCheckFailedException", "ok"]


def test_fault_scenarios__conflict_only_where_dynamodb_can_answer_one() -> None:
    """A TransactionConflict meets writes and transactions, never a read; a lost answer can meet any call."""
    scenarios = fault_scenarios({"A": ["GetItem", "PutItem"], "B": ["Query"]}, FAULTS)
    assert scenarios == [
        (),
        ("A1: lose-response",),
        ("A2: lose-response",),
        ("A2: transaction-conflict",),
        ("B1: lose-response",),
    ]


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (["lose-respons"], "unknown fault(s) for explore: 'lose-respons'; explore places these at every call point: "),
        (["hold"], "'hold' (a hold needs a transaction's two turns: use run_interleaving)"),
        ("lose-response", "faults='lose-response': pass a list of fault names"),
    ],
)
def test_explore_faults__bad_names__one_error_listing_the_names(tconn: Connection, faults: Any, message: str) -> None:
    """A fault name explore does not know is refused before anything runs, naming the ones it knows."""
    with pytest.raises(ValidationError) as info:
        explore(sign_ups(tconn, True), conn=tconn, setup=None, invariant=everyone_created, faults=faults)
    assert message in str(info.value)
    if "unknown" in message:
        assert ", ".join(EXPLORE_FAULTS) in str(info.value)


def over_budget(tconn: Connection, strategy: str, budget: int) -> str:
    """The error of exploring the pinned sign-ups with FAULTS by ``strategy`` within ``budget`` runs."""
    with pytest.raises(ValidationError) as info:
        explore(
            sign_ups(tconn, True),
            conn=tconn,
            setup=empty_table(tconn),
            invariant=everyone_created,
            faults=FAULTS,
            strategy=strategy,
            budget=budget,
        )
    return str(info.value)


def test_explore_faults__exhaustive_budget_overflowed__one_error_with_the_numbers(tconn: Connection) -> None:
    """Faults multiply runs: exhaustive says how many it would need."""
    assert over_budget(tconn, "exhaustive", 6) == (
        "2 actors with A: 1 + B: 1 calls have 2 orders x 5 fault scenarios (no fault and each of 4 faults "
        "(lose-response, transaction-conflict at 2 call points)) = 10 runs, more than budget=6; use "
        "strategy='dpor' (explores one order per class of equivalent orders) or 'pct' (samples), or raise "
        "budget to 10"
    )


def test_explore_faults__dpor_budget_overflowed__names_the_scenario_it_reached(tconn: Connection) -> None:
    """DPOR with faults that run out of budget: which scenario of how many, never a silent pass."""
    message = over_budget(tconn, "dpor", 3)
    assert "need more than budget=3 DPOR runs to cover every non-equivalent order (no fault and each of 4" in message
    assert "the budget ran out in scenario 4 of 5)" in message  # one DPOR run per scenario: no conflicts
