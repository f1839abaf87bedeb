"""recipes/sharded_counter.py: add_once counts once under every order and fault; add is approximate, as it says."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from labkit.races import explore
from labkit.shared.backend import Connection
from recipes.sharded_counter import add, add_once, shard_key, total
from tests.cookbook.exploration import FAULTS, Runs

NAME, SHARDS = "views", 4
Write = Callable[[Any, str], Any]  # (client or None, token) -> anything


def two_writers(conn: Connection, write: Write, *, own_client: Any = None) -> Any:
    """A and B each add 1 with ``write``; after every run the sum must equal the increments that returned.

    ``own_client``: the actors use it (botocore's retries on, as in a service); else each gets a lab
    client without retries, so a lost answer reaches the recipe's own code.
    """
    runs = Runs()

    def setup() -> None:
        runs.next()
        for i in range(SHARDS):
            conn.client.delete_item(TableName=conn.table_name, Key=shard_key(NAME, i))

    def counted_once(res: Any) -> None:
        counted = total(conn.client, conn.table_name, NAME, SHARDS)
        assert counted == len(res.results), f"counted {counted} for {len(res.results)} acknowledged increment(s)"

    def token(name: str) -> str:
        """A fresh token every run, on the same shard every run: add_once picks its shard from the token,
        and explore needs an actor to make the same calls in every run (the same order, the same key)."""
        base = runs.token(name)
        for i in itertools.count():
            candidate = f"{base}-{i}"
            if zlib.crc32(candidate.encode()) % SHARDS == ord(name) % SHARDS:
                return candidate
        raise AssertionError("unreachable")

    def writer(name: str) -> Callable[..., Any]:
        if own_client is not None:
            return lambda: write(own_client, token(name))
        return lambda client: write(client, token(name))

    actors = {"A": writer("A"), "B": writer("B")}
    return explore(actors, conn=conn, setup=setup, invariant=counted_once, faults=FAULTS)


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_add_once__two_writers_every_order_and_fault__each_counted_once(tconn: Connection, sdk: Any) -> None:
    """A lost answer (resent by botocore, same token) or a conflict at any call: the sum is 2."""
    table = tconn.table_name
    result = two_writers(tconn, lambda c, token: add_once(c, table, NAME, SHARDS, token=token), own_client=sdk)
    assert result.passed, result.summary()
    assert "lose-response" in result.guarantee and "transaction-conflict" in result.guarantee


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_add_once__no_sdk_retries__its_own_retry_keeps_the_token(tconn: Connection) -> None:
    """Actors without botocore's retries: the lost answer reaches add_once, which resends the same token."""
    table = tconn.table_name
    result = two_writers(tconn, lambda c, token: add_once(c, table, NAME, SHARDS, token=token))
    assert result.passed, result.summary()


def test_add__a_lost_answer_resent_by_botocore__counts_twice(tconn: Connection, sdk: Any) -> None:
    """The approximate ADD, as its docstring says: the exploration finds the double count, with the fault."""
    table = tconn.table_name
    result = two_writers(tconn, lambda c, token: add(c, table, NAME, 1), own_client=sdk)
    assert not result.passed and result.faults and "lose-response" in result.faults[0], result.summary()
    assert "counted 3 for 2" in (result.message or ""), result.message


def test_add_once__a_new_token_per_attempt__counts_twice(tconn: Connection) -> None:
    """Broken: a retry with a fresh token is a new request, and the lost first attempt had landed."""
    table = tconn.table_name

    def fresh_token_each_time(client: Any, token: str) -> None:
        try:
            add_once(client, table, NAME, SHARDS, token=token, attempts=1)
        except Exception:  # the broken variant: "it failed, so send it again" — with a new token
            add_once(client, table, NAME, SHARDS, token=token + "-again", attempts=1)

    result = two_writers(tconn, fresh_token_each_time)
    assert not result.passed and result.faults and "lose-response" in result.faults[0], result.summary()


def leave_unprocessed(client: Any, how_many: int) -> list[int]:
    """Make this client's BatchGetItem answers hold back ``how_many`` keys in UnprocessedKeys, as a busy
    DynamoDB does (a stand-in until the race lab's ``unprocessed-items`` fault exists: see
    tests/cookbook/exploration.py, WEAK_ANSWERS). Returns how many items each answer kept, filled as they happen."""
    kept_per_call: list[int] = []

    def hold_back(parsed: dict[str, Any], **_: Any) -> None:
        if kept_per_call:  # only the first answer holds keys back; the next ones answer in full
            kept_per_call.extend(len(items) for items in parsed.get("Responses", {}).values())
            return
        for table, items in parsed.get("Responses", {}).items():
            held, parsed["Responses"][table] = items[:how_many], items[how_many:]
            if held:
                keys = [{"PK": item["PK"], "SK": item["SK"]} for item in held]
                parsed.setdefault("UnprocessedKeys", {})[table] = {"Keys": keys, "ConsistentRead": True}
            kept_per_call.append(len(items) - len(held))

    client.meta.events.register("after-call.dynamodb.BatchGetItem", hold_back)
    return kept_per_call


def fill(client: Any, table: str, counts: list[int]) -> None:
    for shard, n in enumerate(counts):
        update = {"UpdateExpression": "ADD n :n", "ExpressionAttributeValues": {":n": {"N": str(n)}}}
        client.update_item(TableName=table, Key=shard_key(NAME, shard), **update)


def test_total__keys_left_unprocessed__asked_again_and_summed(tconn: Connection) -> None:
    """A BatchGetItem that leaves keys unprocessed: total() asks for them again and counts every shard."""
    client, table = tconn.new_client(), tconn.table_name
    fill(client, table, [1, 2, 3, 4])
    kept = leave_unprocessed(client, 1)
    assert total(client, table, NAME, SHARDS) == 10
    assert kept == [3, 1], f"the first answer held one key back, the second gave it: {kept}"


def test_total__ignoring_unprocessed_keys__undercounts(tconn: Connection) -> None:
    """Broken: summing the first answer only misses the held-back shards."""
    client, table = tconn.new_client(), tconn.table_name
    fill(client, table, [1, 1, 1, 1])
    leave_unprocessed(client, 2)
    keys = [shard_key(NAME, i) for i in range(SHARDS)]
    answer = client.batch_get_item(RequestItems={table: {"Keys": keys, "ConsistentRead": True}})
    first_answer_only = sum(int(item["n"]["N"]) for item in answer["Responses"][table])
    assert first_answer_only == 2 < total(client, table, NAME, SHARDS) == 4
