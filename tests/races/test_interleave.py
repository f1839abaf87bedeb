"""Forced interleavings: one order of real DynamoDB calls, followed exactly or refused with RaceError."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

from labkit.races import (
    HISTORY_COLUMNS,
    parse_order,
    run_interleaving,
)
from labkit.races.gate import GatedRun
from labkit.shared.backend import Connection
from labkit.shared.errors import ConflictError, RaceError, ValidationError
from tests.races.increments import (
    KEY,
    conditional_increment,
    naive_increment,
    put_counter,
    race_two,
    read_counter,
    safe_increment,
)

#: A run here ends at its error after a call or two; this bound is only the stall guard (a hang), so its size is free.
GUARD_SECONDS = 60.0


def test_run_interleaving__abab_read_modify_write__both_read_zero_and_one_update_is_lost(
    tconn: Connection,
) -> None:
    """ABAB: both actors read 0, both write 1; the counter ends at 1, not 2."""
    res = race_two(tconn, naive_increment, "ABAB")
    assert res.results == {"A": 1, "B": 1}
    assert res.errors == {}
    assert read_counter(tconn) == 1


def test_run_interleaving__history__records_every_call_in_the_forced_order(
    tconn: Connection,
) -> None:
    """The history has one row per call: actor, seq, turn, operation, key, times, outcome."""
    res = race_two(tconn, naive_increment, "ABBA")
    h = res.history
    assert tuple(h.columns) == HISTORY_COLUMNS
    assert list(h["actor"]) == ["A", "B", "B", "A"]
    assert list(h["operation"]) == ["GetItem", "GetItem", "PutItem", "PutItem"]
    assert list(h["seq"]) == [0, 0, 1, 1]
    assert list(h["turn"]) == [0, 1, 2, 3]
    assert set(h["key"]) == {"COUNTER/C"}
    assert set(h["outcome"]) == {"ok"} and set(h["retries"]) == {0}
    assert (h["start"] < h["end"]).all()
    assert (h["end"].iloc[:-1].to_numpy() <= h["start"].iloc[1:].to_numpy()).all()
    assert res.turns == ("A", "B", "B", "A") and res.label == "A B B A"


@pytest.mark.parametrize("order", ["ABAB", "A B A B", ["A", "B", "A", "B"], ("A", "B", "A", "B")])
def test_run_interleaving__order_spellings__are_the_same_order(tconn: Connection, order: Any) -> None:
    """ "ABAB", "A B A B" and ["A","B","A","B"] all mean the same four turns."""
    res = race_two(tconn, naive_increment, order)
    assert res.order == ("A", "B", "A", "B")
    assert list(res.history["actor"]) == ["A", "B", "A", "B"]


def test_run_interleaving__conditional_update_loses__records_the_failure_then_retries_freely(
    tconn: Connection,
) -> None:
    """ABAB with conditional updates: B's update fails, B re-reads and retries after the order."""
    res = race_two(tconn, safe_increment, "ABAB")
    h = res.history
    assert list(h["outcome"])[:4] == ["ok", "ok", "ok", "ConditionalCheckFailedException"]
    assert list(h["turn"].isna())[4:] == [True, True]
    assert list(h["operation"])[4:] == ["GetItem", "UpdateItem"]
    assert res.results == {"A": 1, "B": 2} and read_counter(tconn) == 2


def test_run_interleaving__actor_ends_with_dynamodb_error__is_an_outcome_not_a_failure(
    tconn: Connection,
) -> None:
    """ConditionalCheckFailed after an actor's last turn lands in res.errors; nothing raises."""
    put_counter(tconn)
    table = tconn.table_name

    def once(client: Any) -> int:
        return conditional_increment(client, table)

    res = run_interleaving({"A": once, "B": once}, "ABAB", conn=tconn)
    assert res.results == {"A": 1}
    assert res.error_codes() == {"B": "ConditionalCheckFailedException"}
    assert isinstance(res.errors["B"], ClientError)


def test_run_interleaving__actor_ends_with_labkit_conflict__is_an_outcome(
    tconn: Connection,
) -> None:
    """A labkit DynamoError (e.g. ConflictError) after the last turn is an outcome too."""
    put_counter(tconn)
    table = tconn.table_name

    def wrapped(client: Any) -> int:
        try:
            return conditional_increment(client, table)
        except ClientError as exc:
            raise ConflictError("lost the race", "ConditionalCheckFailedException") from exc

    res = run_interleaving({"A": wrapped, "B": wrapped}, "ABBA", conn=tconn)
    assert res.error_codes() == {"A": "ConditionalCheckFailedException"}


def test_run_interleaving__unknown_actor__raises_race_error_naming_it(tconn: Connection) -> None:
    """An order naming an actor that does not exist is refused before anything runs."""
    actor = naive_increment(tconn.table_name)
    with pytest.raises(RaceError, match=r"unknown actor\(s\) 'C'"):
        run_interleaving({"A": actor, "B": actor}, "ABC", conn=tconn)


def test_run_interleaving__actor_returns_before_its_turns__raises_race_error(
    tconn: Connection,
) -> None:
    """An actor that returns with turns left makes the order impossible: RaceError, no hang."""
    put_counter(tconn)
    actor = naive_increment(tconn.table_name)

    def lazy(client: Any) -> str:
        return "did nothing"

    expected = r"actor 'B' returned after 0 turn\(s\) but the order gives it 2"
    with pytest.raises(RaceError, match=expected):
        run_interleaving({"A": actor, "B": lazy}, "ABAB", conn=tconn, timeout=GUARD_SECONDS)


def test_run_interleaving__actor_raises__raises_race_error_naming_actor_with_cause(
    tconn: Connection,
) -> None:
    """A non-DynamoDB exception in an actor is a bug: RaceError names the actor, keeps the cause."""
    put_counter(tconn)
    actor = naive_increment(tconn.table_name)

    def broken(client: Any) -> None:
        client.get_item(TableName=tconn.table_name, Key=KEY)
        raise ValueError("oops")

    with pytest.raises(RaceError, match="actor 'B' raised ValueError: oops") as info:
        run_interleaving({"A": actor, "B": broken}, "ABAB", conn=tconn, timeout=GUARD_SECONDS)
    assert isinstance(info.value.__cause__, ValueError)


def test_run_interleaving__abort__stops_actors_that_swallow_exceptions(tconn: Connection) -> None:
    """Waiting actors give up when the run aborts, even inside `except Exception`."""
    put_counter(tconn)
    table = tconn.table_name

    def stubborn(client: Any) -> None:
        while True:
            with contextlib.suppress(Exception):  # swallows everything it can
                client.get_item(TableName=table, Key=KEY)

    def broken(client: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RaceError, match="actor 'A' raised RuntimeError"):
        run_interleaving({"A": broken, "B": stubborn}, "ABB", conn=tconn, timeout=GUARD_SECONDS)
    actors = [t for t in threading.enumerate() if t.name.startswith("labkit-actor-")]
    for t in actors:
        t.join(GUARD_SECONDS)  # they leave by themselves (an injected exception); never wait forever
    assert [t.name for t in actors if t.is_alive()] == []


def test_run_interleaving__turn_never_taken__times_out_with_race_error(tconn: Connection) -> None:
    """An actor stuck outside DynamoDB never takes its turn: RaceError after `timeout`, no hang.

    The stuck actor has the first turn, so the verdict does not depend on how fast another
    actor's real call is (on a loaded machine it may not answer within the 0.5 s).
    """
    put_counter(tconn)
    actor = naive_increment(tconn.table_name)
    never = threading.Event()

    def stuck(client: Any) -> None:
        never.wait(10)

    try:
        with pytest.raises(RaceError, match=r"timed out: turn 1 \(actor 'B'\) was never taken"):
            run_interleaving({"A": actor, "B": stuck}, "BABA", conn=tconn, timeout=0.5)
    finally:
        never.set()


def test_run_interleaving__call_in_flight_at_timeout__says_slow_answer_not_never_taken(
    tconn: Connection,
) -> None:
    """A turn taken whose call has not answered when time is up is reported as slow, not as stuck."""
    put_counter(tconn)
    table = tconn.table_name
    answer = threading.Event()

    def slow(client: Any) -> None:  # its request waits (like one on a loaded machine) until the run gave up
        client.meta.events.register("before-send.dynamodb", lambda **_: answer.wait(10) and None)
        client.get_item(TableName=table, Key=KEY)

    try:
        with pytest.raises(RaceError, match=r"turn 1 \(actor 'A'\) was taken but its call had not answered"):
            run_interleaving({"A": slow, "B": naive_increment(table)}, "ABB", conn=tconn, timeout=0.5)
    finally:
        answer.set()


def test_gated_run__a_step_taken__moves_the_stall_deadline_on_by_its_patience() -> None:
    """A stall is ``timeout`` with no progress, not a run longer than ``timeout`` (decision 225).

    On a loaded machine a run of many slow calls outlasted the 10 s default and was reported as a hang
    (the plugin's docs example, load 15). Each turn taken and each call answered now moves the deadline.
    """
    run = GatedRun(chooser=None, deadline=time.monotonic() + 30.0)  # type: ignore[arg-type]
    assert 29.0 < run.patience <= 30.0
    run.deadline = time.monotonic() - 1.0  # as if the first 30 s had passed
    run._progressed()
    assert run.deadline - time.monotonic() > 29.0
    later = run.deadline + 100.0
    run.deadline = later
    run._progressed()  # never moves it back
    assert run.deadline == later


def test_run_interleaving__actor_calls_after_the_run_aborted__calls_raise_instead_of_running_free(
    tconn: Connection,
) -> None:
    """An actor that reaches its first call only after the run failed is stopped, never left ungated.

    On a loaded machine an actor thread can start its first call after the run has aborted and
    detached; it then looped forever here, ungated (a flaky failure of the test above this one).
    """
    put_counter(tconn)
    table = tconn.table_name
    late = threading.Event()
    calls: list[str] = []

    def late_stubborn(client: Any) -> None:
        late.wait(10)  # starts only after run_interleaving has raised
        for _ in range(100):
            with contextlib.suppress(Exception):
                client.get_item(TableName=table, Key=KEY)
                calls.append("ungated")

    def broken(client: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RaceError, match="actor 'A' raised RuntimeError"):
        run_interleaving({"A": broken, "B": late_stubborn}, "ABB", conn=tconn, timeout=GUARD_SECONDS)
    late.set()
    actors = [t for t in threading.enumerate() if t.name == "labkit-actor-B"]
    for t in actors:
        t.join(GUARD_SECONDS)  # returns when the thread ends
    assert calls == []
    assert [t.name for t in actors if t.is_alive()] == []


def test_run_interleaving__connection_error__still_passes_the_turn_on() -> None:
    """A call that fails to connect (after-call-error) is recorded and the next turn is granted."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    dead = Connection("endpoint", f"http://127.0.0.1:{port}", "us-east-1", "labkit-dead")

    def probe(client: Any) -> str:
        try:
            client.get_item(TableName="labkit-dead", Key=KEY)
        except EndpointConnectionError:
            return "unreachable"
        return "reached"

    res = run_interleaving({"A": probe, "B": probe}, "AB", conn=dead, timeout=10)
    assert res.results == {"A": "unreachable", "B": "unreachable"}
    assert list(res.history["outcome"]) == ["EndpointConnectionError"] * 2


def test_run_interleaving__strict_false__drops_turns_of_an_actor_that_stopped(
    tconn: Connection,
) -> None:
    """With strict=False an actor that stops early gives up its remaining turns."""
    put_counter(tconn)
    table = tconn.table_name

    def check_then_act(client: Any) -> str:
        n = int(client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]["n"]["N"])
        if n:
            return "taken"
        client.put_item(TableName=table, Item={**KEY, "n": {"N": "1"}})
        return "mine"

    res = run_interleaving({"A": check_then_act, "B": check_then_act}, "AABB", conn=tconn, strict=False)
    assert res.results == {"A": "mine", "B": "taken"}
    assert res.turns == ("A", "A", "B")


def test_run_interleaving__other_after_call_handler_raises__turn_still_passes_on(
    tconn: Connection,
) -> None:
    """A handler that drops a response (raises in after-call) cannot stall the order."""
    put_counter(tconn)
    table = tconn.table_name

    def lossy(client: Any) -> str:
        def drop(**_: Any) -> None:
            client.meta.events.unregister("after-call.dynamodb.PutItem", drop)
            raise ConnectionClosedError(endpoint_url=client.meta.endpoint_url)

        client.meta.events.register("after-call.dynamodb.PutItem", drop)
        try:
            client.put_item(TableName=table, Item={**KEY, "n": {"N": "7"}})
        except ConnectionClosedError:
            return "response lost"
        return "answered"

    def reader(client: Any) -> int:
        item = client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
        return int(item["n"]["N"])

    res = run_interleaving({"A": lossy, "B": reader}, "AB", conn=tconn, timeout=GUARD_SECONDS)
    assert res.results == {"A": "response lost", "B": 7}
    assert list(res.history["outcome"]) == ["ok", "ok"]


@pytest.mark.parametrize(
    ("actors", "timeout", "message"),
    [
        ({}, 1.0, "no actors given"),
        ({"A": 42}, 1.0, "actor 'A' is int, not a function of no arguments, or of one DynamoDB client"),
        ({"A B": print}, 1.0, "must be a non-empty string without spaces"),
        ({"A": print}, 0, "timeout must be a positive number"),
    ],
)
def test_run_interleaving__bad_arguments__raise_validation_error(
    conn: Connection, actors: Any, timeout: float, message: str
) -> None:
    """Bad actors or timeout are refused with a message saying what to pass."""
    with pytest.raises(ValidationError, match=message):
        run_interleaving(actors, "A", conn=conn, timeout=timeout)


def test_parse_order__multi_letter_names__need_spaces() -> None:
    """Actor names longer than a letter are written with spaces between turns."""
    assert parse_order("alice bob alice", ["alice", "bob"]) == ("alice", "bob", "alice")
    with pytest.raises(RaceError, match="unknown actor"):
        parse_order("alicebob", ["alice", "bob"])
