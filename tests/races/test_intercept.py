"""Every DynamoDB call an actor makes is gated, whatever made it (labkit.shared.intercept).

boto3 clients and resources, PynamoDB models, clients created before the run, threads an actor
starts: all are gated and recorded under the actor. What cannot be gated (another endpoint, a
request that bypassed botocore's client call, aiobotocore, a thread that outlives its run) is
refused with a clear error, and nothing is sent.
"""

from __future__ import annotations

import socket
import sys
import threading
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from botocore.httpsession import URLLib3Session
from pynamodb.attributes import NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.models import Model

from labkit.races import explore, run_interleaving
from labkit.races.sessions import WorkerTally
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError, ValidationError
from labkit.shared.intercept import Binding, bound, endpoint_key, install
from labkit.shared.intercept import wrapper as intercept_calls
from tests.helpers import resource_table
from tests.races.increments import KEY, put_counter, read_counter


def team_client(conn: Connection, **config: Any) -> Any:
    """A client the way a team makes one: its own session, botocore's default retries."""
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=conn.endpoint_url,
        region_name=conn.region,
        aws_access_key_id=C.LOCAL_ACCESS_KEY,
        aws_secret_access_key=C.LOCAL_SECRET_KEY,
        config=Config(**config) if config else None,
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------- boto3 resources and clients


def test_resource_actor__no_argument__every_call_gated_and_the_lost_update_forced(tconn: Connection) -> None:
    """Actors of no argument using one module-level resource Table: ABAB loses an update, recorded."""
    put_counter(tconn)
    table = resource_table(tconn)

    def add_one() -> int:
        n = int(table.get_item(Key={"PK": "COUNTER", "SK": "C"}, ConsistentRead=True)["Item"]["n"])
        table.put_item(Item={"PK": "COUNTER", "SK": "C", "n": n + 1})
        return n + 1

    res = run_interleaving({"A": add_one, "B": add_one}, "A B A B", conn=tconn)
    assert res.results == {"A": 1, "B": 1}
    assert read_counter(tconn) == 1  # one update lost
    h = res.history
    # this once failed (1 of ~4 full runs) with six rows for four calls: both actors met the new
    # client at once and its handlers were attached twice (the test after the next one)
    assert list(h["actor"]) == ["A", "B", "A", "B"], h.to_string()
    assert list(h["operation"]) == ["GetItem", "GetItem", "PutItem", "PutItem"]
    assert set(h["key"]) == {"COUNTER/C"}  # the resource's Python values, serialised like a client's


def test_shared_client__two_actors__each_call_recorded_under_the_thread_that_made_it(tconn: Connection) -> None:
    """One client used by both actors (module-level): the history attributes each call by thread."""
    put_counter(tconn)
    client = team_client(tconn)

    def reader(name: str) -> Any:
        def actor() -> None:
            client.get_item(TableName=tconn.table_name, Key=KEY, ConsistentRead=True)
            client.put_item(TableName=tconn.table_name, Item={"PK": {"S": name}, "SK": {"S": "X"}})

        return actor

    res = run_interleaving({"A": reader("A"), "B": reader("B")}, "B A A B", conn=tconn)
    h = res.history
    assert list(zip(h["actor"], h["operation"], h["key"], strict=True)) == [
        ("B", "GetItem", "COUNTER/C"),
        ("A", "GetItem", "COUNTER/C"),
        ("A", "PutItem", "A/X"),
        ("B", "PutItem", "B/X"),
    ]


def test_new_client_met_by_two_threads_at_once__handlers_attached_once__each_call_recorded_once(
    tconn: Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two bound threads whose first call is on one new client (an actor's pool tasks fanning reads
    out): the client's handlers are attached once. botocore's ``unique_id`` check is not atomic, so
    attached by both at once, GetItem's after-call could run twice and the dry run counted each pool
    task's one read as two (test_sub_actors' fan-out, 1 run in 14 at ``-n 3``)."""
    install()
    attaching: list[int] = []
    other_arrived = threading.Event()
    attach = intercept_calls._attach

    def attach_holding_the_door(client: Any) -> None:
        attaching.append(threading.get_ident())
        if len(attaching) == 1:
            other_arrived.wait(0.5)  # unguarded, the other thread is in here too by now
        else:
            other_arrived.set()
        attach(client)

    monkeypatch.setattr(intercept_calls, "_attach", attach_holding_the_door)
    client, start = team_client(tconn), threading.Barrier(2)
    tallies = {name: WorkerTally() for name in ("T1", "T2")}

    def get(name: str) -> None:
        with bound(Binding(name, tallies[name])):
            start.wait()
            client.get_item(TableName=tconn.table_name, Key=KEY)

    threads = [threading.Thread(target=get, args=(name,)) for name in tallies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(attaching) == 1, "both threads attached the client's handlers"
    assert {name: tally.calls for name, tally in tallies.items()} == {"T1": 1, "T2": 1}


def test_unbound_threads__setup_invariant_and_test_body__pass_ungated(tconn: Connection) -> None:
    """Calls from the test body on the same client, before and after the run, are not recorded or held."""
    client = team_client(tconn)
    put_counter(tconn)
    client.get_item(TableName=tconn.table_name, Key=KEY)  # before: ungated

    def actor() -> None:
        client.update_item(TableName=tconn.table_name, Key=KEY, UpdateExpression="ADD n :one",
                           ExpressionAttributeValues={":one": {"N": "1"}})  # fmt: skip

    res = run_interleaving({"A": actor}, "A", conn=tconn)
    assert len(res.history) == 1
    client.get_item(TableName=tconn.table_name, Key=KEY)  # after: ungated, no turn needed
    assert read_counter(tconn) == 1


def test_team_client_with_retries__lost_response__one_turn_with_the_sdks_retry_in_the_history(
    tconn: Connection,
) -> None:
    """A turn is one API call, the SDK's own retries included: the lost answer meets botocore's retry."""
    put_counter(tconn)
    client = team_client(tconn, retries={"mode": "standard", "max_attempts": 3})

    def actor() -> None:
        client.update_item(TableName=tconn.table_name, Key=KEY, UpdateExpression="ADD n :one",
                           ExpressionAttributeValues={":one": {"N": "1"}})  # fmt: skip

    res = run_interleaving({"A": actor, "B": actor}, "A B", conn=tconn, faults=["A1: lose-response"])
    h = res.history
    assert res.errors == {}
    assert list(h["outcome"]) == ["ok", "ok"] and list(h["retries"]) == [1, 0]
    assert list(h["injected"].fillna("")) == ["lose-response", ""]
    assert read_counter(tconn) == 3  # ADD is not idempotent: the SDK's resend added again


# --------------------------------------------------------------- PynamoDB


class AccountShape(Model):
    """A team's PynamoDB model (its table and endpoint are set per test below)."""

    class Meta:
        table_name = "unused"

    PK = UnicodeAttribute(hash_key=True)
    SK = UnicodeAttribute(range_key=True)
    n = NumberAttribute(default=0)


class VersionedShape(AccountShape):
    version = VersionAttribute()


def pynamo_models(conn: Connection) -> tuple[type[AccountShape], type[VersionedShape]]:
    class Account(AccountShape):
        class Meta:
            table_name = conn.table_name
            host = conn.endpoint_url
            region = conn.region
            aws_access_key_id = C.LOCAL_ACCESS_KEY
            aws_secret_access_key = C.LOCAL_SECRET_KEY

    class Versioned(VersionedShape):
        Meta = Account.Meta  # type: ignore[assignment]  # the same table and endpoint

    return Account, Versioned


def test_pynamodb_model__read_modify_write__lost_update_forced(tconn: Connection) -> None:
    """A PynamoDB model's get + save, two actors in ABAB: both read 0, the counter ends at 1."""
    account, _ = pynamo_models(tconn)
    account("ACCT", "BAL", n=0).save()

    def deposit() -> None:
        item = account.get("ACCT", "BAL", consistent_read=True)
        item.n = item.n + 1
        item.save()

    res = run_interleaving({"A": deposit, "B": deposit}, "ABAB", conn=tconn)
    assert account.get("ACCT", "BAL").n == 1
    assert list(res.history["operation"]) == ["GetItem", "GetItem", "PutItem", "PutItem"]
    assert set(res.history["key"]) == {"ACCT/BAL"}


def test_pynamodb_version_attribute__explore__passes_every_order(tconn: Connection) -> None:
    """With a VersionAttribute the stale save fails (and is retried): explore proves every deposit lands."""
    _, versioned = pynamo_models(tconn)

    def setup() -> None:
        tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": "ACCT"}, "SK": {"S": "BAL"}})
        versioned("ACCT", "BAL", n=0).save()  # version 1

    def deposit() -> None:
        while True:
            item = versioned.get("ACCT", "BAL", consistent_read=True)
            try:
                item.update(actions=[versioned.n.set(item.n + 1)])
                return
            except UpdateError:
                continue

    def both_landed(res: Any) -> None:
        assert versioned.get("ACCT", "BAL", consistent_read=True).n == Decimal(2)

    result = explore({"A": deposit, "B": deposit}, conn=tconn, setup=setup, invariant=both_landed)
    assert result.passed, result.summary()


# --------------------------------------------------------------- threads an actor starts


def test_actor_thread__calls_of_a_thread_it_starts__are_its_sub_actors_turns(tconn: Connection) -> None:
    """An actor that does its read on a thread it starts: the read is sub-actor A.1's turn, in order."""
    put_counter(tconn)
    client = team_client(tconn)

    def via_thread() -> None:
        t = threading.Thread(target=client.get_item, kwargs={"TableName": tconn.table_name, "Key": KEY})
        t.start()
        t.join()
        client.put_item(TableName=tconn.table_name, Item={"PK": {"S": "A"}, "SK": {"S": "X"}})

    def other() -> None:
        client.get_item(TableName=tconn.table_name, Key=KEY)

    res = run_interleaving({"A": via_thread, "B": other}, "A.1 B A", conn=tconn)
    assert list(zip(res.history["actor"], res.history["operation"], strict=True)) == [
        ("A.1", "GetItem"),
        ("B", "GetItem"),
        ("A", "PutItem"),
    ]
    # the order of the days before sub-actors: A cannot take turn 1, it waits for A.1
    with pytest.raises(RaceError, match=r"turn 1 belongs to 'A', but A joins A.1, and only their turns can end them"):
        run_interleaving({"A": via_thread, "B": other}, "A B A", conn=tconn)


def test_actor_pool__work_submitted_to_a_pool_made_outside__runs_as_a_sub_actor(tconn: Connection) -> None:
    """A ThreadPoolExecutor created in the test body: each actor's submitted call is its sub-actor's turn."""
    put_counter(tconn)
    client = team_client(tconn)
    with ThreadPoolExecutor(max_workers=2) as pool:
        pool.submit(client.list_tables).result()  # the pool's threads exist, unbound

        def actor() -> None:
            pool.submit(client.get_item, TableName=tconn.table_name, Key=KEY).result()

        res = run_interleaving({"A": actor, "B": actor}, "B.1 A.1", conn=tconn)
        pool.submit(client.list_tables).result()  # unbound again after the run
    assert list(res.history["actor"]) == ["B.1", "A.1"]


def test_actor_thread__left_running_after_the_run__the_run_fails_naming_it_and_its_late_call_is_refused(
    tconn: Connection,
) -> None:
    """A thread an actor starts and never joins fails the run, named; its call after the run is refused."""
    put_counter(tconn)
    client = team_client(tconn)
    go, done = threading.Event(), threading.Event()
    seen: list[BaseException] = []

    def late() -> None:
        go.wait(10)
        try:
            client.get_item(TableName=tconn.table_name, Key=KEY)
        except BaseException as exc:
            seen.append(exc)
        done.set()

    def actor() -> None:
        threading.Thread(target=late, daemon=True).start()
        client.get_item(TableName=tconn.table_name, Key=KEY)

    with pytest.raises(RaceError, match=r"actor 'A' returned while thread 'A.1' it started was still running"):
        run_interleaving({"A": actor}, "A", conn=tconn)
    go.set()
    assert done.wait(60)  # set after one GetItem: an event; 60 s guards a hang only
    assert isinstance(seen[0], RaceError)
    assert "thread 'A.1' of actor 'A' made a DynamoDB call (GetItem) after its run had ended" in str(seen[0])


# --------------------------------------------------------------- refused, never sent


def test_client_for_another_endpoint__refused_naming_it_and_nothing_sent(tconn: Connection) -> None:
    """A client still pointing elsewhere (as if created before the plugin routed it) is refused."""
    elsewhere = f"http://127.0.0.1:{closed_port()}"
    stray = boto3.session.Session().client(
        "dynamodb", endpoint_url=elsewhere, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )

    def actor() -> None:
        stray.get_item(TableName=tconn.table_name, Key=KEY)

    with pytest.raises(RaceError) as info:
        run_interleaving({"A": actor}, "A", conn=tconn)
    message = str(info.value)
    assert f"actor 'A' made a DynamoDB call (GetItem) on a client whose endpoint is {elsewhere}" in message
    assert f"not the lab's ({endpoint_key(tconn.endpoint_url)}); nothing was sent" in message
    assert info.value.__cause__ is None  # refused before sending: no connection error underneath


def test_request_that_bypassed_the_client_call__refused(tconn: Connection) -> None:
    """A DynamoDB request sent on an actor's thread without botocore's client call cannot be gated."""
    session = URLLib3Session()

    def actor() -> None:
        request = AWSPreparedRequest(
            "POST",
            str(tconn.endpoint_url),
            {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0"},  # type: ignore[arg-type]
            b"{}",
            False,
        )
        session.send(request)

    with pytest.raises(RaceError, match=r"actor 'A' sent a DynamoDB request \(ListTables\) that did not go through"):
        run_interleaving({"A": actor}, "A", conn=tconn)


@pytest.fixture
def aiobotocore_layout(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """aiobotocore's layout: ``aiobotocore.client.AioBaseClient`` overrides ``_make_api_call`` (async).

    aiobotocore itself cannot be installed next to labkit's botocore (1.44): every aiobotocore
    release pins botocore to the narrow range it was built for. The guard reads only this layout.
    """
    from botocore.client import BaseClient

    class AioBaseClient(BaseClient):
        async def _make_api_call(self, operation_name: str, api_params: Any) -> Any:
            return {"sent": operation_name}

    module = types.ModuleType("aiobotocore.client")
    module.AioBaseClient = AioBaseClient  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "aiobotocore.client", module)
    yield AioBaseClient


def test_aiobotocore_call_in_an_actor__refused_naming_the_limitation(
    tconn: Connection, aiobotocore_layout: Any
) -> None:
    """An async client's call on an actor's thread is refused: the run never claims it was gated."""
    import asyncio

    client = aiobotocore_layout.__new__(aiobotocore_layout)

    def actor() -> None:
        asyncio.run(client._make_api_call("GetItem", {}))

    with pytest.raises(RaceError, match=r"actor 'A' made an aiobotocore call \(GetItem\): the race lab gates"):
        run_interleaving({"A": actor}, "A", conn=tconn)
    assert asyncio.run(client._make_api_call("GetItem", {})) == {"sent": "GetItem"}  # unbound: untouched


@pytest.mark.parametrize(
    ("actor", "message"),
    [
        (lambda a, b: None, r"actor 'A' needs the arguments \(a, b\); an actor is a function of no arguments"),
        (lambda *, k: None, r"actor 'A' needs the arguments \(k\)"),
    ],
)
def test_actor_of_two_arguments__validation_error_saying_what_an_actor_is(
    tconn: Connection, actor: Any, message: str
) -> None:
    """An actor is fn() or fn(client): anything else is refused before any run."""
    with pytest.raises(ValidationError, match=message):
        run_interleaving({"A": actor}, "A", conn=tconn)


def test_actor_of_one_argument_with_a_default__gets_the_lab_client(tconn: Connection) -> None:
    """fn(client) still gets the lab's client (no retries); fn(x=1) is an actor of no arguments."""
    put_counter(tconn)
    got: dict[str, Any] = {}

    def with_client(client: Any) -> None:
        got["client"] = client
        client.get_item(TableName=tconn.table_name, Key=KEY)

    def no_args(extra: int = 1) -> None:
        got["extra"] = extra
        team_client(tconn).get_item(TableName=tconn.table_name, Key=KEY)

    res = run_interleaving({"A": with_client, "B": no_args}, "A B", conn=tconn)
    assert got["extra"] == 1
    assert got["client"].meta.config.retries["total_max_attempts"] == 1
    assert list(res.history["actor"]) == ["A", "B"]
