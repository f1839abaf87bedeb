"""Faults on purpose in the race lab: DynamoDB's error shapes, faults per call, held transactions."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from labkit.engine_plugins.faults import (
    Conflict,
    Hold,
    LoseResponse,
    ServerError,
    Throttle,
    control,
    inject,
    parse_faults,
    rejection,
)
from labkit.patterns import uniqueness as U
from labkit.races import run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    OutcomeUnknown,
    RaceError,
    TransactionConflict,
    ValidationError,
    ValueTaken,
)
from tests.faults.support import CONFLICT, client, get, injected, item, signup

#: A run here ends at its error after a call or two; this bound is only the stall guard (a hang), so its size is free.
GUARD_SECONDS = 60.0

# ---------------------------------------------------------------- DynamoDB's shapes


def test_rejection__conflict_on_transaction__cancelled_with_reasons_in_request_order() -> None:
    """A transaction conflict is TransactionCanceledException: TransactionConflict at the action, None elsewhere."""
    rej = rejection("TransactionConflict", "TransactWriteItems", {"TransactItems": [{}, {}, {}]}, item=1)
    assert (rej.code, rej.status, rej.apply_first) == ("TransactionCanceledException", 400, False)
    assert rej.extra["CancellationReasons"] == [{"Code": "None"}, CONFLICT, {"Code": "None"}]
    assert rej.message.endswith("[None, TransactionConflict, None]")


def test_rejection__conflict_on_single_write__transaction_conflict_exception() -> None:
    """A PutItem meeting a transaction gets TransactionConflictException, HTTP 400."""
    rej = rejection("TransactionConflict", "PutItem", {})
    assert (rej.code, rej.status) == ("TransactionConflictException", 400)
    assert rej.message == "Operation was rejected because there is an ongoing transaction for the item."


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ("ProvisionedThroughputExceededException", 400),
        ("ThrottlingException", 400),
        ("RequestLimitExceeded", 400),
        ("InternalServerError", 500),
        ("ServiceUnavailable", 503),
    ],
)
def test_rejection__service_errors__dynamodb_code_and_status(error: str, status: int) -> None:
    """Throttling errors are 400s; InternalServerError 500; ServiceUnavailable 503."""
    rej = rejection(error, "GetItem", {})
    assert (rej.code, rej.status) == (error, status)


def test_rejection__unknown_error__validation_error_suggests_the_name() -> None:
    """A misspelt error name says which one was meant."""
    with pytest.raises(ValidationError, match="did you mean 'ThrottlingException'"):
        rejection("ThrottlingExeption", "GetItem", {})


# ---------------------------------------------------------------- race-lab faults


def test_race_fault__lose_response__applied_then_read_timeout_and_pinned_resend_succeeds(
    tconn: Connection,
) -> None:
    """B2 lose-response: the sign-up is applied, B sees ReadTimeoutError; resending the same
    Registration succeeds once, a naive retry (new token and id) says the email is taken."""
    table = tconn.table_name
    reg = U.prepare_registration(email="ada@lovelace.io", username="ada")

    def b(client: Any) -> str:
        U.taken_values(client, table, reg)  # call 1
        U.submit(client, table, reg)  # call 2: lost
        return "answered"

    res = run_interleaving({"B": b}, "B B", conn=tconn, faults=["B2: lose-response"])
    assert isinstance(res.errors["B"], OutcomeUnknown)  # labkit's: the write MAY have been applied
    assert isinstance(res.errors["B"].__cause__, ReadTimeoutError)
    assert list(res.history["outcome"]) == ["ok", "ReadTimeoutError"]
    assert injected(res) == ["", "lose-response"]
    assert U.get_account(tconn.client, table, reg.account_id) is not None  # the write was applied
    with pytest.raises(ValueTaken) as naive:
        U.register(tconn.client, table, email="ada@lovelace.io", username="ada")
    assert naive.value.fields == {"email": "ada@lovelace.io", "username": "ada"}
    assert U.submit(tconn.client, table, reg) == reg  # same token: succeeds, writes nothing new


def test_race_fault__connection_closed__raises_connection_closed_error(tconn: Connection) -> None:
    """The connection-closed variant raises what botocore raises when the socket drops."""
    table = tconn.table_name

    def a(client: Any) -> None:
        client.put_item(TableName=table, Item=item("P", v="1"))

    res = run_interleaving({"A": a}, "A", conn=tconn, faults={"A": {1: LoseResponse("connection-closed")}})
    assert isinstance(res.errors["A"], ConnectionClosedError)
    assert get(tconn, "P") == item("P", v="1")


def test_race_fault__transaction_conflict__register_raises_transaction_conflict_and_retry_succeeds(
    tconn: Connection,
) -> None:
    """A1 transaction-conflict(2): cancelled with the reason at the username marker, nothing
    written; labkit maps it to TransactionConflict, and the resend succeeds."""
    table = tconn.table_name
    reg = U.prepare_registration(email="ada@lovelace.io", username="ada")

    def a(client: Any) -> str:
        try:
            U.submit(client, table, reg)
        except TransactionConflict as exc:
            assert exc.reasons == ({"Code": "None"}, {"Code": "None"}, CONFLICT)
            # a call on another client from the actor's thread is still the actor's: a turn, recorded
            assert U.table_items(tconn.client, table).empty  # nothing was written
            U.submit(client, table, reg)
            return "retried"
        return "first try"

    res = run_interleaving({"A": a}, "A A A", conn=tconn, faults=["A1: transaction-conflict(2)"])
    assert res.results == {"A": "retried"}
    assert list(res.history["operation"]) == ["TransactWriteItems", "Scan", "TransactWriteItems"]
    assert list(res.history["outcome"]) == ["TransactionCanceledException", "ok", "ok"]
    assert U.audit(tconn.client, table).ok


def test_race_fault__transaction_conflict_on_put__transaction_conflict_exception(tconn: Connection) -> None:
    """On a single-item write the same fault is TransactionConflictException, and nothing is written."""
    table = tconn.table_name

    def a(client: Any) -> None:
        client.put_item(TableName=table, Item=item("P"))

    res = run_interleaving({"A": a}, "A", conn=tconn, faults={"A": {1: Conflict()}})
    err = res.errors["A"]
    assert isinstance(err, ClientError)
    assert err.response["Error"]["Code"] == "TransactionConflictException"
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert get(tconn, "P") is None


@pytest.mark.parametrize(
    ("fault", "code", "status"),
    [
        ("throttle", "ProvisionedThroughputExceededException", 400),
        ("throttling-exception", "ThrottlingException", 400),
        ("internal-error", "InternalServerError", 500),
    ],
)
def test_race_fault__service_error__shape_and_nothing_written(
    tconn: Connection,
    fault: str,
    code: str,
    status: int,
) -> None:
    """Throttling and a 500 answer without writing (the race lab's clients do not retry)."""
    table = tconn.table_name

    def a(client: Any) -> None:
        client.put_item(TableName=table, Item=item("P"))

    res = run_interleaving({"A": a}, "A", conn=tconn, faults=[f"A1: {fault}"])
    err = res.errors["A"]
    assert isinstance(err, ClientError)
    assert (err.response["Error"]["Code"], err.response["ResponseMetadata"]["HTTPStatusCode"]) == (code, status)
    assert get(tconn, "P") is None
    assert injected(res) == [fault]


def test_race_fault__internal_error_applied__written_then_500(tconn: Connection) -> None:
    """internal-error-applied: the write happened, the answer is a 500 (as DynamoDB may do)."""
    table = tconn.table_name

    def a(client: Any) -> None:
        client.put_item(TableName=table, Item=item("P"))

    res = run_interleaving({"A": a}, "A", conn=tconn, faults={"A": {1: ServerError(applied=True)}})
    assert res.error_codes() == {"A": "InternalServerError"}
    assert get(tconn, "P") == item("P")


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (["B3: throttle"], "B3 .* can never fire: the order 'A B B' gives 'B' 2 turn"),
        (["A2: hold"], "needs 3 .*a hold takes two turns"),
        (["Z1: throttle"], "actor 'Z', which is not one of"),
        (["A1: thottle"], "unknown fault 'thottle'.*did you mean 'throttle'"),
        (["A1 throttle"], "is not 'ACTOR N: fault'"),
        (["A0: throttle"], "call number must be an int >= 1, not 0"),
        (["A1: throttle", "A1: hold"], "two faults on A1"),
        ({"A": {1: "throttle"}}, "not a labkit.engine_plugins.faults.Fault"),
        ("A1: throttle", "pass a list of strings"),
    ],
)
def test_race_fault__bad_spec__validation_error_before_any_call(
    tconn: Connection,
    faults: Any,
    message: str,
) -> None:
    """A fault that cannot fire, or cannot be read, is refused before the run: nothing is called."""
    calls: list[str] = []

    def actor(client: Any) -> None:
        calls.append("called")

    with pytest.raises(ValidationError, match=message):
        run_interleaving({"A": actor, "B": actor}, "A B B", conn=tconn, faults=faults)
    assert calls == []


def test_inject__lost_response_on_a_retrying_client__sdk_resends_the_same_token(tconn: Connection) -> None:
    """inject() outside the race lab: botocore's own retry meets the lost response and resends the
    same body (same auto ClientRequestToken), so the conditional transaction is applied once."""
    c = client(tconn, attempts=3)
    bodies: list[bytes] = []
    c.meta.events.register("before-send.dynamodb.TransactWriteItems", lambda request, **_: bodies.append(request.body))
    plan = inject(c, ["1: lose-response"])
    put = {"TableName": tconn.table_name, "Item": item("P"), "ConditionExpression": "attribute_not_exists(PK)"}
    out = c.transact_write_items(TransactItems=[{"Put": put}])
    plan.close()
    assert out["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert plan.fired == [("client", 1, "lose-response")]
    with pytest.raises(ValidationError, match="a hold needs turns"):
        inject(c, ["1: hold"])


def test_inject__transaction_conflict_outside_the_race_lab__cancelled_transaction_or_conflict_exception(
    tconn: Connection,
) -> None:
    """inject() on a plain client: a TransactWriteItems gets TransactionCanceledException with the
    TransactionConflict reason at its action (the operation read from the X-Amz-Target bytes), a PutItem
    TransactionConflictException — as in the race lab. Nothing is written."""
    c = client(tconn, attempts=1)
    inject(c, ["1: transaction-conflict(1)", "2: transaction-conflict"])
    puts = [{"Put": {"TableName": tconn.table_name, "Item": item(k)}} for k in ("C1", "C2")]
    with pytest.raises(ClientError) as cancelled:
        c.transact_write_items(TransactItems=puts)
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled.value.response["CancellationReasons"]] == ["None", "TransactionConflict"]
    with pytest.raises(ClientError) as single:
        c.put_item(TableName=tconn.table_name, Item=item("C3"))
    assert single.value.response["Error"]["Code"] == "TransactionConflictException"
    assert tconn.client.scan(TableName=tconn.table_name)["Count"] == 0


def test_parse_faults__dsl_and_dict__same_plan() -> None:
    """The string DSL and the dict form build the same plan."""
    dsl = parse_faults(["B2: lose-response", "A1: transaction-conflict(1)", "A3: hold"], ["A", "B"])
    assert dsl == {"B": {2: LoseResponse()}, "A": {1: Conflict(1), 3: Hold()}}
    assert parse_faults(["A1: throttling-exception"], ["A"]) == {"A": {1: Throttle("ThrottlingException")}}


# ---------------------------------------------------------------- held transactions (real conflicts)


def test_hold__competing_registration__transaction_conflict_at_the_shared_markers(no_faults: Connection) -> None:
    """A's sign-up held in flight; B's sign-up for the same email and username is cancelled by the
    endpoint with TransactionConflict at both markers; A commits; B's retry finds them taken."""
    table = no_faults.table_name
    b_errors: list[BaseException] = []

    def b(client: Any) -> str:
        try:
            return signup(table, "ada@lovelace.io", "ada")(client)
        except TransactionConflict as exc:
            b_errors.append(exc)
            raise

    res = run_interleaving(
        {"A": signup(table, "ada@lovelace.io", "ada"), "B": b}, "A B A", conn=no_faults, faults=["A1: hold"]
    )
    assert list(res.history["outcome"]) == ["held", "TransactionCanceledException", "ok"]
    assert injected(res) == ["hold", "", "commit"]
    (err,) = b_errors
    assert isinstance(err, TransactionConflict)
    assert err.reasons == ({"Code": "None"}, CONFLICT, CONFLICT)
    assert U.audit(no_faults.client, table).ok
    with pytest.raises(ValueTaken):
        signup(table, "ada@lovelace.io", "ada")(no_faults.client)


def test_hold__plain_write_to_a_held_item__transaction_conflict_exception(no_faults: Connection) -> None:
    """A PutItem on an item of the held transaction gets TransactionConflictException and writes nothing."""
    table = no_faults.table_name
    marker = {"PK": {"S": "UNIQ#EMAIL#ada@lovelace.io"}, "SK": {"S": "LOCK"}}

    def b(client: Any) -> None:
        client.put_item(TableName=table, Item={**marker, "owner": {"S": "mallory"}})

    res = run_interleaving(
        {"A": signup(table, "ada@lovelace.io", "ada"), "B": b}, "A B A", conn=no_faults, faults=["A1: hold"]
    )
    assert res.error_codes() == {"B": "TransactionConflictException"}
    stored = no_faults.client.get_item(TableName=table, Key=marker)["Item"]
    assert stored["owner"]["S"] == res.results["A"]


def test_hold__other_items__not_blocked(no_faults: Connection) -> None:
    """Writes to items outside the held transaction go through while it is in flight."""
    table = no_faults.table_name

    def b(client: Any) -> str:
        return signup(table, "bob@example.com", "bob")(client)

    res = run_interleaving(
        {"A": signup(table, "ada@lovelace.io", "ada"), "B": b}, "A B A", conn=no_faults, faults=["A1: hold"]
    )
    assert res.errors == {}
    assert list(res.history["outcome"]) == ["held", "ok", "ok"]


def test_hold__aborted_run__releases_the_hold(no_faults: Connection) -> None:
    """A run that fails between prepare and commit leaves no lock behind."""
    table = no_faults.table_name

    def b(client: Any) -> None:
        raise RuntimeError("broken actor")

    with pytest.raises(RaceError):
        run_interleaving(
            {"A": signup(table, "ada@lovelace.io", "ada"), "B": b},
            "A B A",
            conn=no_faults,
            faults=["A1: hold"],
            timeout=GUARD_SECONDS,
        )
    assert control(str(no_faults.endpoint_url), "GetFaults", {})["Held"] == []
    signup(table, "ada@lovelace.io", "ada")(no_faults.client)  # not blocked


def test_hold__on_a_non_transaction__race_error_says_where_to_move_it(no_faults: Connection) -> None:
    """Only a TransactWriteItems can be held."""
    table = no_faults.table_name

    def a(client: Any) -> None:
        client.put_item(TableName=table, Item=item("P"))

    with pytest.raises(RaceError, match="only a TransactWriteItems can be held"):
        run_interleaving({"A": a}, "A A", conn=no_faults, faults=["A1: hold"], strict=False)
