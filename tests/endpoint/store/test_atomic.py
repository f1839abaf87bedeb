"""Atomic requests: 16 threads on one item never lose an update, one email registered by 16
clients has exactly one winner, a failing transaction or update leaves nothing behind, a
cancelled transaction reports its reasons in request order. Race tests set a tiny thread switch
interval (``racy``) so that a missing lock would show."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.shared.backend import Connection
from tests.endpoint.clients import error_code
from tests.endpoint.tables import count_items, key

ROUNDS = 3
#: Each race test runs ROUNDS times: round 0 in the fast loop, the repeats among the slow checks.
REPEATED = pytest.mark.parametrize("round_", [0, *(pytest.param(n, marks=pytest.mark.slow) for n in range(1, ROUNDS))])
THREADS = 16


def _run_threads(target: Callable[[int], None], n: int = THREADS) -> None:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"


@REPEATED
def test_atomic__16_threads_conditional_increments__final_value_equals_successes(
    lab: Connection, racy: None, round_: int
) -> None:
    """Read-then-conditional-update from 16 clients never loses an update."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**key("COUNTER"), "n": {"N": "0"}})
    successes = [0] * THREADS
    conflicts = [0] * THREADS
    start = threading.Barrier(THREADS)

    def worker(i: int) -> None:
        own = lab.new_client()
        start.wait()
        for _ in range(30):
            item = own.get_item(TableName=lab.table_name, Key=key("COUNTER"), ConsistentRead=True)
            old = item["Item"]["n"]["N"]
            try:
                own.update_item(
                    TableName=lab.table_name,
                    Key=key("COUNTER"),
                    UpdateExpression="SET n = :new",
                    ConditionExpression="n = :old",
                    ExpressionAttributeValues={
                        ":old": {"N": old},
                        ":new": {"N": str(int(old) + 1)},
                    },
                )
                successes[i] += 1
            except ClientError as exc:
                assert error_code(exc) == "ConditionalCheckFailedException"
                conflicts[i] += 1  # retried by the next attempt, which re-reads

    _run_threads(worker)
    final = client.get_item(TableName=lab.table_name, Key=key("COUNTER"), ConsistentRead=True)
    assert int(final["Item"]["n"]["N"]) == sum(successes)
    assert sum(conflicts) > 0, "no conflicting update happened: the race was not exercised"


@REPEATED
def test_atomic__16_concurrent_registrations_of_one_email__exactly_one_winner_no_leftovers(
    lab: Connection, racy: None, round_: int
) -> None:
    """16 transactions claim one email: one wins, the 15 losers leave no item behind."""
    email = f"ada-{round_}@example.com"
    outcomes: list[str] = [""] * THREADS
    start = threading.Barrier(THREADS)

    def register(i: int) -> None:
        own: Any = lab.new_client()
        guard = {"ConditionExpression": "attribute_not_exists(PK)"}
        start.wait()
        try:
            own.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": lab.table_name, "Item": key(f"USER#{i}"), **guard}},
                    {"Put": {"TableName": lab.table_name, "Item": key(f"EMAIL#{email}"), **guard}},
                ]
            )
            outcomes[i] = "won"
        except ClientError as exc:
            outcomes[i] = error_code(exc)

    _run_threads(register)
    assert outcomes.count("won") == 1
    assert set(outcomes) == {"won", "TransactionCanceledException"}
    winner = outcomes.index("won")
    items = lab.client.scan(TableName=lab.table_name)["Items"]
    assert sorted(i["PK"]["S"] for i in items) == sorted([f"EMAIL#{email}", f"USER#{winner}"])


def test_atomic__transaction_whose_later_write_fails__undoes_its_earlier_writes(
    lab: Connection,
) -> None:
    """A write that fails while applying (not a condition) rolls back the writes before it."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**key("TEXT"), "n": {"S": "not a number"}})
    with pytest.raises(ClientError):
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": lab.table_name, "Item": {**key("NEW"), "v": {"N": "1"}}}},
                {
                    "Update": {
                        "TableName": lab.table_name,
                        "Key": key("TEXT"),
                        "UpdateExpression": "SET n = n + :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        )
    assert "Item" not in client.get_item(TableName=lab.table_name, Key=key("NEW"))
    text = client.get_item(TableName=lab.table_name, Key=key("TEXT"))["Item"]
    assert text["n"] == {"S": "not a number"}


def test_atomic__update_failing_half_way__leaves_the_item_unchanged(lab: Connection) -> None:
    """moto applies `SET a` before `ADD s` fails on a string; the endpoint undoes it."""
    client = lab.client
    client.put_item(TableName=lab.table_name, Item={**key("HALF"), "s": {"S": "text"}})
    with pytest.raises(ClientError) as caught:
        client.update_item(
            TableName=lab.table_name,
            Key=key("HALF"),
            UpdateExpression="SET a = :v ADD s :v",
            ExpressionAttributeValues={":v": {"N": "1"}},
        )
    assert error_code(caught.value) == "ValidationException"
    item = client.get_item(TableName=lab.table_name, Key=key("HALF"))["Item"]
    assert item == {**key("HALF"), "s": {"S": "text"}}


def test_atomic__cancelled_transaction__reports_reasons_in_request_order_and_writes_nothing(
    lab: Connection,
) -> None:
    """A failed condition cancels the whole transaction, with one reason per action."""
    client: Any = lab.client
    client.put_item(TableName=lab.table_name, Item={**key("TAKEN"), "who": {"S": "ada"}})
    guard = {"ConditionExpression": "attribute_not_exists(PK)"}
    with pytest.raises(ClientError) as caught:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": lab.table_name, "Item": key("FREE"), **guard}},
                {
                    "Put": {
                        "TableName": lab.table_name,
                        "Item": key("TAKEN"),
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        **guard,
                    }
                },
            ]
        )
    reasons: Any = caught.value.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"]["who"] == {"S": "ada"}
    assert count_items(lab) == 1
