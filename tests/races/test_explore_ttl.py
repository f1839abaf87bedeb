"""Code that trusts TTL to hide an expired item, found by the race lab (issue 42, item 3).

DynamoDB's developer guide, "Using time to live (TTL) in DynamoDB": "Items with valid, expired TTL
attributes may be deleted by the system at any time, typically within a few days of their expiration.
You can still update the expired items that are pending deletion ... While updating an expired item,
we recommended that you use a condition expression to make sure the item has not been subsequently
deleted. Use filter expressions to remove expired items from Scan and Query results."

The lab's endpoint serves an expired item until its TTL process runs, so a run with no fault meets
"expired, not yet deleted"; the ``ttl-delete`` fault runs the TTL process just before a chosen call, so
explore also meets "already deleted" at every call point. The lab's clock is moved past expiry
(``Labkit.AdvanceClock``), never waited for; the code under test reads the lab's time (``lab_epoch``)
as its clock.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from botocore.exceptions import ClientError

import labkit
from labkit.embedded import DYNAMODB_LOCAL, start_endpoint
from labkit.engine_plugins.faults.control import advance_clock, lab_epoch
from labkit.races import Exploration, Interleaving, explore, run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import ConfigurationError

TTL = "expires"
HOLD = {"PK": {"S": "USERNAME#alice"}, "SK": {"S": "HOLD"}}
SESSION = {"PK": {"S": "SESSION#s1"}, "SK": {"S": "SESSION"}}
HOLD_SECONDS = 600
SESSION_SECONDS = 1800
HOUR = 3600

Clock = Callable[[], float]


@pytest.fixture(scope="module")
def lab() -> Iterator[Connection]:
    """An endpoint of this module's own (its clock moves here only), a lab table with TTL on ``expires``."""
    with start_endpoint() as endpoint:
        name = f"labkit-ttl-{uuid.uuid4().hex[:8]}"
        conn = Connection("embedded", endpoint.url, "us-east-1", name)
        labkit.ensure_table(conn, name)
        conn.client.update_time_to_live(TableName=name, TimeToLiveSpecification={"AttributeName": TTL, "Enabled": True})
        yield conn


def number(value: float) -> dict[str, str]:
    return {"N": str(int(value))}


def code(exc: BaseException) -> str:
    return str(exc.response["Error"]["Code"]) if isinstance(exc, ClientError) else type(exc).__name__


# --- a uniqueness hold with a TTL: expired, not yet deleted ----------------------------------


def hold_expired_an_hour_ago(lab: Connection) -> None:
    """bob held the name for ten minutes; the lab's clock then moves an hour on (nothing deleted it yet)."""
    lab.client.put_item(
        TableName=lab.table_name,
        Item={**HOLD, "owner": {"S": "bob"}, TTL: number(lab_epoch(lab) + HOLD_SECONDS)},
    )
    advance_clock(lab, HOUR)


def claim_trusting_ttl(table: str, user: str, now: Clock) -> Callable[[Any], str]:
    """Hold the name for ten minutes if nobody holds it: TTL is trusted to have removed an expired hold."""

    def actor(client: Any) -> str:
        client.put_item(
            TableName=table,
            Item={**HOLD, "owner": {"S": user}, TTL: number(now() + HOLD_SECONDS)},
            ConditionExpression="attribute_not_exists(PK)",
        )
        return user

    return actor


def claim_filtering_on_ttl(table: str, user: str, now: Clock) -> Callable[[Any], str]:
    """The same hold, taken also over an expired one: the condition reads the TTL attribute itself."""

    def actor(client: Any) -> str:
        client.put_item(
            TableName=table,
            Item={**HOLD, "owner": {"S": user}, TTL: number(now() + HOLD_SECONDS)},
            ConditionExpression="attribute_not_exists(PK) OR #ttl < :now",
            ExpressionAttributeNames={"#ttl": TTL},
            ExpressionAttributeValues={":now": number(now())},
        )
        return user

    return actor


def one_claim_wins(lab: Connection) -> Callable[[Interleaving], None]:
    def invariant(res: Interleaving) -> None:
        assert len(res.results) == 1, (
            f"{len(res.results)} of carol and dave got a name whose only hold expired an hour ago "
            f"(errors: {res.error_codes()})"
        )
        item = lab.client.get_item(TableName=lab.table_name, Key=HOLD, ConsistentRead=True)["Item"]
        assert item["owner"]["S"] in res.results.values()

    return invariant


def explore_claims(lab: Connection, claim: Callable[[str, str, Clock], Callable[[Any], str]]) -> Exploration:
    """carol and dave each claim a name bob held until an hour ago, on the lab's clock, with the deletion before
    every call explored too."""
    now = partial(lab_epoch, lab)  # the code's clock is the lab's
    actors = {"A": claim(lab.table_name, "carol", now), "B": claim(lab.table_name, "dave", now)}
    return explore(
        actors,
        conn=lab,
        setup=lambda: hold_expired_an_hour_ago(lab),
        invariant=one_claim_wins(lab),
        faults=["ttl-delete"],
    )


def test_explore__hold_trusting_ttl__an_expired_hold_not_yet_deleted_blocks_everyone(lab: Connection) -> None:
    """API reference, UpdateTimeToLive: "Items that have expired and not been deleted will still show up in reads,
    queries, and scans": attribute_not_exists(PK) fails on bob's expired hold; found with no fault."""
    result = explore_claims(lab, claim_trusting_ttl)
    assert not result.passed and result.faults == (), result.summary()
    assert (result.message or "").startswith("0 of carol and dave got a name"), result.message
    assert result.interleaving is not None
    assert result.interleaving.error_codes() == {
        "A": "ConditionalCheckFailedException",
        "B": "ConditionalCheckFailedException",
    }


def test_explore__hold_filtering_on_the_ttl_attribute__passes_expired_or_deleted(lab: Connection) -> None:
    """The condition `attribute_not_exists(PK) OR #ttl < :now` takes an expired hold whether or not the TTL process
    has deleted it yet: every order, and the deletion before every call, gives the name to exactly one."""
    result = explore_claims(lab, claim_filtering_on_ttl)
    assert result.passed and result.scenarios == 3, result.summary()  # no fault, A1: ttl-delete, B1: ttl-delete


# --- a session with a TTL: deleted between a read and a write --------------------------------


def session_expired_an_hour_ago(lab: Connection) -> None:
    lab.client.put_item(
        TableName=lab.table_name,
        Item={**SESSION, "user": {"S": "carol"}, TTL: number(lab_epoch(lab) + SESSION_SECONDS)},
    )
    advance_clock(lab, SESSION_SECONDS + HOUR)


def end_session(table: str, now: Clock, *, guarded: bool) -> Callable[[Any], str]:
    """Renew the session while it lives; an expired one is marked ended (the TTL process removes it later).
    ``guarded``: the mark is conditioned on the item still being there, as the developer guide recommends."""

    def actor(client: Any) -> str:
        item = client.get_item(TableName=table, Key=SESSION, ConsistentRead=True).get("Item")
        if item is not None and int(item[TTL]["N"]) > now():
            client.update_item(
                TableName=table,
                Key=SESSION,
                UpdateExpression="SET #ttl = :later",
                ExpressionAttributeNames={"#ttl": TTL},
                ExpressionAttributeValues={":later": number(now() + SESSION_SECONDS)},
            )
            return "renewed"
        guard = {"ConditionExpression": "attribute_exists(PK)"} if guarded else {}
        try:
            client.update_item(
                TableName=table,
                Key=SESSION,
                UpdateExpression="SET ended = :yes",
                ExpressionAttributeValues={":yes": {"BOOL": True}},
                **guard,
            )
        except ClientError as exc:
            if code(exc) != "ConditionalCheckFailedException":
                raise
            return "gone"
        return "ended"

    return actor


def no_session_lives_forever(lab: Connection) -> Callable[[Interleaving], None]:
    def invariant(res: Interleaving) -> None:
        item = lab.client.get_item(TableName=lab.table_name, Key=SESSION, ConsistentRead=True).get("Item")
        assert item is None or TTL in item, f"a session item without {TTL!r} (TTL never deletes it): {item}"

    return invariant


def test_explore__session_ended_without_a_condition__the_ttl_deletion_before_the_write_leaves_an_immortal_item(
    lab: Connection,
) -> None:
    """Developer guide: "While updating an expired item, we recommended that you use a condition expression to
    make sure the item has not been subsequently deleted": without one, the TTL process deleting the session
    just before the UpdateItem makes the update create an item with no TTL. No fault cannot show it; ttl-delete
    before either call does (before A2: read expired, then deleted, then written)."""
    now = partial(lab_epoch, lab)
    actors = {"A": end_session(lab.table_name, now, guarded=False)}
    setup = partial(session_expired_an_hour_ago, lab)
    result = explore(actors, conn=lab, setup=setup, invariant=no_session_lives_forever(lab), faults=["ttl-delete"])
    assert not result.passed and result.faults == ("A1: ttl-delete",), result.summary()  # no fault passed first
    assert result.interleaving is not None
    history = result.interleaving.history
    assert list(history["operation"]) == ["GetItem", "UpdateItem"]
    assert list(history["injected"].fillna("")) == ["ttl-delete", ""]
    setup()  # deleted between the read (expired, still there) and the write: the docs' case
    again = run_interleaving(actors, "A A", conn=lab, faults=["A2: ttl-delete"])
    assert again.results == {"A": "ended"} and list(again.history["injected"].fillna("")) == ["", "ttl-delete"]
    item = lab.client.get_item(TableName=lab.table_name, Key=SESSION, ConsistentRead=True)["Item"]
    assert TTL not in item and item["ended"] == {"BOOL": True}  # the immortal item, replayed


def test_explore__session_ended_with_attribute_exists__passes_at_every_deletion_point(lab: Connection) -> None:
    """With `attribute_exists(PK)` the mark fails on a deleted session (answered "gone"): no immortal item, with the
    deletion before either call or not at all."""
    now = partial(lab_epoch, lab)
    result = explore(
        {"A": end_session(lab.table_name, now, guarded=True)},
        conn=lab,
        setup=lambda: session_expired_an_hour_ago(lab),
        invariant=no_session_lives_forever(lab),
        faults=["ttl-delete"],
    )
    assert result.passed and result.scenarios == 3, result.summary()


# --- where the deletion can be placed --------------------------------------------------------


def test_ttl_delete__nothing_expired__the_history_says_so_and_the_call_goes_out(lab: Connection) -> None:
    """The TTL process deletes only expired items: placed where none is, it deletes nothing, and says so."""
    lab.client.put_item(
        TableName=lab.table_name,
        Item={**SESSION, "user": {"S": "carol"}, TTL: number(lab_epoch(lab) + SESSION_SECONDS)},
    )

    def read(client: Any) -> bool:
        return "Item" in client.get_item(TableName=lab.table_name, Key=SESSION, ConsistentRead=True)

    res = run_interleaving({"A": read}, "A", conn=lab, faults=["A1: ttl-delete"])
    assert res.results == {"A": True}
    assert list(res.history["injected"]) == ["ttl-delete (none: no item was expired)"]


def test_ttl_delete__off_labkit_s_endpoint__configuration_error_nothing_sent() -> None:
    """DynamoDB Local does not support TTL ("TTL is currently not supported on DynamoDB local", its usage notes) and
    AWS runs its TTL process when it will: ttl-delete is refused, before the run or at its call, which is not sent."""
    called: list[str] = []

    def actor(client: Any) -> None:
        called.append("A")
        client.get_item(TableName="orders", Key={"PK": {"S": "x"}})

    remote = Connection("local", "http://127.0.0.1:9", "us-east-1", "t")  # nothing listens there
    with pytest.raises(ConfigurationError, match="ttl-delete need labkit's embedded endpoint"):
        run_interleaving({"A": actor}, "A", conn=remote, faults=["A1: ttl-delete"])
    with pytest.raises(ConfigurationError, match="ttl-delete need labkit's embedded endpoint"):
        explore({"A": actor}, conn=remote, setup=None, invariant=lambda res: True, faults=["ttl-delete"])
    assert called == []
    with start_endpoint(profile=DYNAMODB_LOCAL) as endpoint:
        local = Connection("embedded", endpoint.url, "us-east-1", "orders")
        with pytest.raises(ConfigurationError, match="ttl-delete on A1: the endpoint at .* does not answer"):
            run_interleaving({"A": actor}, "A", conn=local, faults=["A1: ttl-delete"])
    assert called == ["A"]  # the actor called; its request never left (the table does not even exist)
