"""recipes/outbox.py: a sign-up persisted before its send is applied exactly once, whatever order, fault or
restart; definite answers forget the entry, others keep it; past the token window a refusal is ambiguous."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError

import labkit
from labkit.embedded import start_endpoint
from labkit.engine_plugins.faults import inject
from labkit.patterns import uniqueness as uniq
from labkit.races import explore
from labkit.shared.backend import Connection
from labkit.shared.table import ensure_table, reset_table
from recipes import outbox
from recipes.outbox import TOKEN_WINDOW, deliver, deliver_pending, enqueue, pending
from recipes.uniqueness import register_request
from tests.cookbook.exploration import FAULTS, Runs

Deliver = Callable[..., str]


def parked(client: Any, table: str) -> dict[str, str]:
    """The dead letters, entry id -> why."""
    return {entry["SK"]["S"]: entry["parked"]["S"] for entry in pending(client, table, parked=True)}


def first_process_and_a_restart(conn: Connection, sdk: Any, deliverer: Deliver) -> Any:
    """A enqueues a sign-up and delivers it; B, a process restarted meanwhile, delivers whatever is
    pending. After every run (and one more delivery of what is left, as the next restart would do):
    one account, an empty outbox, and nobody was told "refused" for a free email."""
    table, runs = conn.table_name, Runs()

    def setup() -> None:
        runs.next()
        reset_table(conn)

    def first() -> str:
        try:
            entry = enqueue(sdk, table, "signup-ada", register_request(table, "a1", "ada@x.io", "ada", runs.token("A")))
        except ClientError:
            return "not enqueued"  # nothing was sent; the service answers "try again"
        return deliverer(sdk, table, entry, attempts=2)

    def restarted() -> dict[str, str]:
        return {entry["SK"]["S"]: deliverer(sdk, table, entry, attempts=2) for entry in pending(sdk, table)}

    def applied_once(res: Any) -> None:
        if res.results.get("A") == "not enqueued":
            assert uniq.table_items(conn.client, table).empty, "enqueue failed, yet something was written"
            return
        assert not res.errors, res.errors
        told = [res.results["A"], *res.results["B"].values()]
        settled = {entry["SK"]["S"]: deliverer(conn.client, table, entry) for entry in pending(conn.client, table)}
        items = uniq.table_items(conn.client, table)
        assert not (set(told) | set(settled.values())) & {"refused", "ambiguous"}, f"told {told}, then {settled}"
        assert sorted(items["PK"]) == ["ACCT#a1", "UNIQ#EMAIL#ada@x.io", "UNIQ#HANDLE#ada"], sorted(items["PK"])

    actors = {"A": first, "B": restarted}
    return explore(actors, conn=conn, setup=setup, invariant=applied_once, faults=FAULTS, budget=600)


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_deliver__a_restart_meanwhile_every_order_and_fault__applied_once(tconn: Connection, sdk: Any) -> None:
    """Lost answers and conflicts at every call, a second process delivering the same entry: one sign-up."""
    result = first_process_and_a_restart(tconn, sdk, deliver)
    assert result.passed, result.summary()


def test_deliver__forgetting_the_entry_on_any_error__the_sign_up_is_lost(tconn: Connection, sdk: Any) -> None:
    """Broken: an outbox that deletes the entry whatever happened (fire and forget)."""

    def forgets(client: Any, table: str, entry: dict[str, Any], **_: Any) -> str:
        try:
            outcome = deliver(client, table, entry, attempts=1)
        finally:
            client.delete_item(TableName=table, Key={"PK": outbox.PK, "SK": entry["SK"]})
        return outcome

    result = first_process_and_a_restart(tconn, sdk, forgets)
    assert not result.passed and result.faults and "transaction-conflict" in result.faults[0], result.summary()


def test_deliver__a_new_token_per_delivery__its_own_sign_up_refused(tconn: Connection, sdk: Any) -> None:
    """Broken: each delivery mints a token, so a second delivery (a lost answer's, or a restarted
    process's at the same time) is a new request, refused by the sign-up's own items."""

    def new_token(client: Any, table: str, entry: dict[str, Any], **options: Any) -> str:
        request = json.loads(entry["request"]["S"]) | {"ClientRequestToken": str(uuid.uuid4())}
        return deliver(client, table, entry | {"request": {"S": json.dumps(request)}}, **options)

    no_retries = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})  # lost answers reach deliver
    result = first_process_and_a_restart(tconn, no_retries, new_token)
    assert not result.passed and "refused" in (result.message or ""), result.summary()


def test_pending__every_page__also_when_dynamodb_stops_a_page_early(tconn: Connection) -> None:
    """A Query page that ends early with a LastEvaluatedKey (a stand-in for the race lab's future
    ``short-page`` fault): pending() follows every page."""
    client, table = tconn.new_client(), tconn.table_name
    for n in range(5):
        enqueue(client, table, f"e{n}", {"TransactItems": []})

    def one_item_per_page(parsed: dict[str, Any], **_: Any) -> None:
        if len(parsed.get("Items", [])) > 1:
            parsed["Items"] = parsed["Items"][:1]
            parsed["LastEvaluatedKey"] = {"PK": parsed["Items"][0]["PK"], "SK": parsed["Items"][0]["SK"]}

    client.meta.events.register("after-call.dynamodb.Query", one_item_per_page)
    assert [entry["SK"]["S"] for entry in pending(client, table)] == ["e0", "e1", "e2", "e3", "e4"]


def test_deliver__email_taken_before_the_first_send__refused_and_forgotten(tconn: Connection) -> None:
    """A definite answer: the condition failed; the entry is deleted and the caller told "refused"."""
    client, table = tconn.client, tconn.table_name
    uniq.register(client, table, email="ada@x.io", username="someone-else")
    enqueue(client, table, "signup-ada", register_request(table, "a1", "ada@x.io", "ada", str(uuid.uuid4())))
    assert deliver_pending(client, table) == {"signup-ada": "refused"} and pending(client, table) == []


def test_deliver__lost_answer_then_past_the_token_window__read_back_as_applied_not_refused() -> None:
    """On an endpoint with a clock the test moves: a lost answer keeps the entry ("retry"); delivered again
    11 minutes later the resend is a new request, refused by the sign-up's own items; the outbox reads
    them, finds each as its request put it, and reports "applied"."""
    minutes = [0.0]
    with start_endpoint(clock=lambda: 60 * minutes[0]) as endpoint:
        conn = labkit.connect(endpoint_url=endpoint.url, table_name="labkit-outbox-window")
        ensure_table(conn)
        clock = lambda: 60 * minutes[0]  # noqa: E731 - the outbox's clock, the endpoint's clock
        request = register_request(conn.table_name, "a1", "ada@x.io", "ada", str(uuid.uuid4()))
        enqueue(conn.client, conn.table_name, "signup-ada", request, clock=clock)
        dying = conn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
        inject(dying, ["2: lose-response"])  # 1: the Query of pending(), 2: the transaction
        assert deliver_pending(dying, conn.table_name, attempts=1, clock=clock) == {"signup-ada": "retry"}
        assert uniq.get_account(conn.client, conn.table_name, "a1") is not None, "applied; its answer was lost"
        minutes[0] = 11
        assert 60 * minutes[0] > TOKEN_WINDOW
        assert deliver_pending(conn.client, conn.table_name, clock=clock) == {"signup-ada": "applied"}
        assert pending(conn.client, conn.table_name) == [] and parked(conn.client, conn.table_name) == {}


def test_deliver__throttled_or_no_answer__kept_for_the_next_run(tconn: Connection) -> None:
    """Not a definite answer: "retry", and the entry stays; a throttle within the attempts is retried."""
    table = tconn.table_name
    enqueue(tconn.client, table, "e", register_request(table, "a1", "ada@x.io", "ada", str(uuid.uuid4())))

    def client_whose_transaction_meets(fault: str) -> Any:
        client = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
        inject(client, [f"2: {fault}"])  # call 1 is pending()'s Query, call 2 the transaction
        return client

    assert deliver_pending(client_whose_transaction_meets("throttle"), table, attempts=1) == {"e": "retry"}
    assert deliver_pending(client_whose_transaction_meets("connection-closed"), table) == {"e": "retry"}
    assert len(pending(tconn.client, table)) == 1, "kept for the next run"
    assert deliver_pending(client_whose_transaction_meets("throttle"), table) == {"e": "applied"}
    assert pending(tconn.client, table) == []


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


def access_denied(client: Any) -> None:
    """Every TransactWriteItems of ``client`` is answered as IAM refuses one: HTTP 400 AccessDeniedException."""

    def reply(request: Any, **_: Any) -> AWSResponse:
        message = "User: arn:aws:iam::123456789012:user/app is not authorized to perform: dynamodb:TransactWriteItems"
        body = json.dumps({"__type": "com.amazon.coral.service#AccessDeniedException", "Message": message})
        headers = HTTPHeaders()
        headers["x-amzn-RequestId"] = "test"
        return AWSResponse(request.url, 400, headers, _Body(body.encode()))

    client.meta.events.register("before-send.dynamodb.TransactWriteItems", reply)


def test_deliver__an_error_the_text_does_not_keep__parked_with_its_reason_never_resent(tconn: Connection) -> None:
    """Not an answer to wait out: a ValidationException (two actions on one item), an
    IdempotentParameterMismatchException (a token reused for another request) and an AccessDeniedException
    are parked — out of pending(), kept with the error as their reason — and not sent again."""
    client, table = tconn.new_client(), tconn.table_name
    token = str(uuid.uuid4())
    same_item = [outbox_put(table, "UNIQ#EMAIL#ada@x.io"), outbox_put(table, "UNIQ#EMAIL#ada@x.io")]
    enqueue(client, table, "e1-invalid", {"TransactItems": same_item, "ClientRequestToken": str(uuid.uuid4())})
    enqueue(client, table, "e2-first", register_request(table, "a1", "ada@x.io", "ada", token))
    enqueue(client, table, "e3-same-token", register_request(table, "b1", "bob@x.io", "bob", token))
    assert deliver_pending(client, table) == {"e1-invalid": "parked", "e2-first": "applied", "e3-same-token": "parked"}
    denied = tconn.new_client()
    access_denied(denied)
    enqueue(client, table, "e4-denied", register_request(table, "c1", "cy@x.io", "cy", str(uuid.uuid4())))
    assert deliver_pending(denied, table) == {"e4-denied": "parked"}
    assert pending(client, table) == [] and deliver_pending(client, table) == {}, "a parked entry is not resent"
    reasons = parked(client, table)
    assert sorted(reasons) == ["e1-invalid", "e3-same-token", "e4-denied"], reasons
    assert reasons["e1-invalid"].startswith("ValidationException: Transaction request cannot include multiple")
    assert reasons["e3-same-token"].startswith("IdempotentParameterMismatchException"), reasons["e3-same-token"]
    assert reasons["e4-denied"].startswith("AccessDeniedException: User: arn:aws:iam"), reasons["e4-denied"]


def outbox_put(table: str, pk: str) -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {"PK": {"S": pk}, "SK": {"S": "LOCK"}}}}


def test_deliver__refused_past_the_token_window_by_someone_else__read_then_parked_ambiguous() -> None:
    """Past the window, a refusal is read before it is reported: here another account holds the email and
    ada's account item does not exist, so the entry is "ambiguous", parked with the reason."""
    minutes = [0.0]
    with start_endpoint(clock=lambda: 60 * minutes[0]) as endpoint:
        conn = labkit.connect(endpoint_url=endpoint.url, table_name="labkit-outbox-window-2")
        ensure_table(conn)
        clock = lambda: 60 * minutes[0]  # noqa: E731 - the outbox's clock, the endpoint's clock
        enqueue(
            conn.client,
            conn.table_name,
            "signup-ada",
            register_request(conn.table_name, "a1", "ada@x.io", "ada", str(uuid.uuid4())),
            clock=clock,
        )
        uniq.register(conn.client, conn.table_name, email="ada@x.io", username="someone-else")
        minutes[0] = 11
        assert deliver_pending(conn.client, conn.table_name, clock=clock) == {"signup-ada": "ambiguous"}
        reason = parked(conn.client, conn.table_name)["signup-ada"]
        assert reason.startswith("refused after the token window, and its items are not all as it put"), reason
        assert pending(conn.client, conn.table_name) == []


def test_deliver__a_request_botocore_refuses_to_send__parked_with_its_reason_not_retried(tconn: Connection) -> None:
    """A malformed request (a misspelt parameter) never reaches DynamoDB: botocore raises
    ParamValidationError ("Unknown parameter in input"), a BotoCoreError that is no lost answer. Resending
    cannot help, so the entry is parked with that reason, not kept as "retry" for ever."""
    client, table = tconn.new_client(), tconn.table_name
    request = register_request(table, "a1", "ada@x.io", "ada", str(uuid.uuid4()))
    request["ClientRequestTokn"] = request.pop("ClientRequestToken")  # the typo
    enqueue(client, table, "e-typo", request)
    assert deliver_pending(client, table) == {"e-typo": "parked"}
    assert pending(client, table) == [], "a parked entry leaves pending()"
    reason = parked(client, table)["e-typo"]
    assert reason.startswith("ParamValidationError: Parameter validation failed"), reason
    assert 'Unknown parameter in input: "ClientRequestTokn"' in reason, reason
    assert uniq.table_items(client, table)["PK"].tolist() == ["OUTBOX"], "nothing but the dead letter was written"
