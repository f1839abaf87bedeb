"""recipes/guarded_update.py: a change computed from the read lands exactly once, under every order and fault."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from labkit.engine_plugins.faults import inject
from labkit.races import explore, run_interleaving
from labkit.shared.backend import Connection
from recipes.guarded_update import KEEP_OPS, OutcomeUnknown, RetriesExhausted, update
from tests.cookbook.exploration import FAULTS, outcome

KEY = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}
Update = Callable[..., Any]


def raise_by_10(item: dict[str, Any]) -> dict[str, Any]:
    return {"rate_limit_per_minute": {"N": str(int(item["rate_limit_per_minute"]["N"]) + 10)}}


def forgets_its_op(client: Any, table: str, key: Any, change: Any, *, op_id: str, attempts: int = 5, **_: Any) -> Any:
    """Broken: the same loop without the op_id record, so a lost answer's resend applies the change twice."""
    for attempt in range(1, attempts + 1):
        item = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
        new = change(item)
        values = {":a0": next(iter(new.values())), ":read": item["version"]}
        values[":next"] = {"N": str(int(item["version"]["N"]) + 1)}
        try:
            return client.update_item(
                TableName=table,
                Key=key,
                UpdateExpression="SET #a0 = :a0, version = :next",
                ConditionExpression="version = :read",
                ExpressionAttributeNames={"#a0": next(iter(new))},
                ExpressionAttributeValues=values,
            )
        except (ReadTimeoutError, ConnectionClosedError):
            continue
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException" or attempt == attempts:
                raise
            time.sleep(random.uniform(0, 0.001))
    raise RetriesExhausted("gave up")


def swallows_exhaustion(client: Any, table: str, key: Any, change: Any, *, op_id: str, **_: Any) -> Any:
    """Broken (lesson 04's old countess loop): gives up after one attempt and returns as if done."""
    try:
        return update(client, table, key, change, op_id=op_id, attempts=1, base_delay=0.001)
    except RetriesExhausted:
        return None


def two_admins(conn: Connection, client: Any, fn: Update, **options: Any) -> Any:
    """Admins A and B each raise the limit of 60 by 10 with ``fn`` on ``client`` (botocore's retries on)."""
    table = conn.table_name

    def setup() -> None:
        item = {**KEY, "version": {"N": "1"}, "rate_limit_per_minute": {"N": "60"}}
        conn.client.put_item(TableName=table, Item=item)

    def admin(name: str) -> Callable[[], Any]:
        change = (client, table, KEY, raise_by_10)
        return lambda: outcome(lambda: fn(*change, op_id=f"op-{name}", base_delay=0.001, **options), RetriesExhausted)

    def each_raise_counted_once(res: Any) -> None:
        item = conn.client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
        limit = int(item["rate_limit_per_minute"]["N"])
        assert not res.errors, f"unexpected errors: {res.errors}"
        returned = sum(not isinstance(r, RetriesExhausted) for r in res.results.values())  # read as "done"
        assert limit == 60 + 10 * returned, f"limit {limit} after {returned} returned raise(s) of 10 from 60"

    return explore(
        {"A": admin("A"), "B": admin("B")}, conn=conn, setup=setup, invariant=each_raise_counted_once, faults=FAULTS
    )


@pytest.mark.slow  # the full proof, every order x every fault: CI runs it (the fast loop catches the broken variant)
def test_update__two_admins_every_order_and_fault__each_raise_lands_once(tconn: Connection, sdk: Any) -> None:
    """Every order of two raises by 10, with a lost answer (resent by botocore) or a conflict at each call: 80."""
    result = two_admins(tconn, sdk, update)
    assert result.passed, result.summary()
    assert "lose-response" in result.guarantee and result.runs > 20


def test_update__without_its_op_id__a_lost_answer_applies_the_raise_twice(tconn: Connection, sdk: Any) -> None:
    """The broken variant: botocore resends the lost UpdateItem, meets its own write, and the loop raises again."""
    result = two_admins(tconn, sdk, forgets_its_op)
    assert not result.passed and result.faults and "lose-response" in result.faults[0], result.summary()
    assert "limit 90" in (result.message or "") or "limit 100" in (result.message or ""), result.message


def test_update__returning_none_when_it_gives_up__caught(tconn: Connection, sdk: Any) -> None:
    """The broken variant that swallows exhaustion: it says nothing while its raise is lost."""
    result = two_admins(tconn, sdk, swallows_exhaustion)
    assert not result.passed, result.summary()


def test_update__retries_exhausted__raises_and_wrote_nothing(tconn: Connection) -> None:
    """With one attempt and the other admin first (A B A B), B raises RetriesExhausted; the limit is A's 70."""
    table = tconn.table_name
    tconn.client.put_item(TableName=table, Item={**KEY, "version": {"N": "1"}, "rate_limit_per_minute": {"N": "60"}})
    actors = {
        "A": lambda c: update(c, table, KEY, raise_by_10, op_id="a"),
        "B": lambda c: outcome(lambda: update(c, table, KEY, raise_by_10, op_id="b", attempts=1), RetriesExhausted),
    }
    res = run_interleaving(actors, "A B A B B", conn=tconn)
    assert isinstance(res.results["B"], RetriesExhausted) and "gave up after 1 attempt(s)" in str(res.results["B"])
    item = tconn.client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
    assert item["rate_limit_per_minute"]["N"] == "70" and [op["S"] for op in item["recent_ops"]["L"]] == ["a"]


def test_update__missing_item__lookup_error_names_the_key(tconn: Connection) -> None:
    """No item: a LookupError that says to create it, and nothing written."""
    with pytest.raises(LookupError, match="create it first"):
        update(tconn.client, tconn.table_name, KEY, raise_by_10, op_id="x")


def lost_answer_then_overtaken(conn: Connection, overtaking: int) -> tuple[Any, dict[str, Any]]:
    """A raises the limit of 60 by 10; its UpdateItem is applied and its answer lost (botocore's retries
    off, so ``update`` itself meets the lost answer); before its next read, ``overtaking`` other writes
    (each a raise by 10 with its own op_id) land. What A's ``update`` returned or raised, and the item."""
    table = conn.table_name
    conn.client.put_item(TableName=table, Item={**KEY, "version": {"N": "1"}, "rate_limit_per_minute": {"N": "60"}})
    a = conn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
    inject(a, ["2: lose-response"])  # call 1: A's GetItem, call 2: its UpdateItem (applied, answer lost)
    reads = []

    def others_overtake(**_: Any) -> None:
        reads.append(1)
        if len(reads) == 2:  # A's read after the lost answer: the others write first
            for n in range(overtaking):
                update(conn.client, table, KEY, raise_by_10, op_id=f"other-{n}", base_delay=0.001)

    a.meta.events.register("before-call.dynamodb.GetItem", others_overtake)
    result = outcome(lambda: update(a, table, KEY, raise_by_10, op_id="op-A", base_delay=0.001), OutcomeUnknown)
    return result, conn.client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]


def test_update__lost_answer_then_keep_ops_writes_overtake__still_applied_once(tconn: Connection) -> None:
    """The window's edge: KEEP_OPS (10) writes land between A's lost answer and its next read; A's op_id is
    still in the item, so A returns without writing again: 60 + 10 (A) + 100 (the others) = 170."""
    result, item = lost_answer_then_overtaken(tconn, KEEP_OPS)
    assert not isinstance(result, Exception), result
    assert item["rate_limit_per_minute"]["N"] == str(60 + 10 * (1 + KEEP_OPS)), item["rate_limit_per_minute"]
    assert len(item["recent_ops"]["L"]) == KEEP_OPS + 1 and item["recent_ops"]["L"][0] == {"S": "op-A"}


def test_update__lost_answer_then_more_than_keep_ops_writes_overtake__outcome_unknown_not_applied_twice(
    tconn: Connection,
) -> None:
    """Past the window: 11 writes overtake A's lost answer, A's op_id has left the item, and A cannot tell
    whether its change landed: it raises OutcomeUnknown and writes nothing more (the limit counts A once)."""
    result, item = lost_answer_then_overtaken(tconn, KEEP_OPS + 1)
    assert isinstance(result, OutcomeUnknown) and f"more than {KEEP_OPS} writes" in str(result), result
    assert item["rate_limit_per_minute"]["N"] == str(60 + 10 * (2 + KEEP_OPS)), "A's raise applied twice"


@pytest.mark.parametrize("fault", ["internal-error-applied", "internal-error"])
def test_update__5xx_after_botocores_retries__outcome_read_applied_once(tconn: Connection, fault: str) -> None:
    """A 500 InternalServerError that reaches the loop (botocore's retries spent) may or may not have been
    applied ("the request may or may not have succeeded"): the loop reads the item and finds its op_id
    (applied) or writes again (not applied); either way one raise: 70, never an error, never 80."""
    table = tconn.table_name
    tconn.client.put_item(TableName=table, Item={**KEY, "version": {"N": "1"}, "rate_limit_per_minute": {"N": "60"}})
    a = tconn.new_client(retries={"mode": "standard", "total_max_attempts": 1})  # the 500 reaches update()
    inject(a, [f"2: {fault}"])  # call 1: the GetItem, call 2: the UpdateItem answered 500
    update(a, table, KEY, raise_by_10, op_id="op-A", base_delay=0.001)
    item = tconn.client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
    assert item["rate_limit_per_minute"]["N"] == "70" and [op["S"] for op in item["recent_ops"]["L"]] == ["op-A"]
