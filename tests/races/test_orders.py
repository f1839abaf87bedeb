"""Every order: count the calls, enumerate the interleavings, run them all."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from labkit.races import (
    Interleaving,
    all_interleavings,
    count_calls,
    interleavings,
)
from labkit.shared.backend import Connection
from labkit.shared.errors import RaceError, ValidationError
from tests.races.increments import (
    KEY,
    conditional_increment,
    lost,
    naive_increment,
    put_counter,
    read_counter,
    safe_increment,
)


def test_interleavings__two_by_two__six_sorted_orders() -> None:
    """Two actors with two calls each have C(4,2) = 6 orders."""
    orders = interleavings({"A": 2, "B": 2})
    assert ["".join(o) for o in orders] == ["AABB", "ABAB", "ABBA", "BAAB", "BABA", "BBAA"]
    assert len(interleavings({"A": 2, "B": 2, "C": 2})) == 90


def test_interleavings__too_many__raises_validation_error() -> None:
    """Factorial blow-up is refused with advice, not run for hours."""
    with pytest.raises(ValidationError, match="use fewer actors"):
        interleavings({"A": 5, "B": 5, "C": 5})


@pytest.mark.aws_verified
@pytest.mark.parametrize(
    ("make", "lost_update", "final"),
    [
        # GetItem + PutItem(n+1) loses an update in exactly the 4 orders where the reads overlap.
        pytest.param(
            naive_increment, [False, True, True, True, True, False], [2, 1, 1, 1, 1, 2], id="read-modify-write-4-of-6"
        ),
        # Conditional update with re-read and retry: 0 of 6 orders lose an update.
        pytest.param(safe_increment, [False] * 6, [2] * 6, id="conditional-update-none"),
    ],
)
def test_all_interleavings__two_increments__lose_an_update_in_the_orders_where_it_can(
    tconn: Connection, make: Any, lost_update: list[bool], final: list[int]
) -> None:
    """Every order of two actors of two calls runs; the table says, per order, whether an update was lost."""
    actor = make(tconn.table_name)
    df = all_interleavings({"A": actor, "B": actor}, conn=tconn, setup=lambda: put_counter(tconn), outcome=lost(tconn))
    assert df.attrs["calls"] == {"A": 2, "B": 2}
    assert list(df["order"]) == ["A A B B", "A B A B", "A B B A", "B A A B", "B A B A", "B B A A"]
    assert list(df["lost_update"]) == lost_update
    assert list(df["final"]) == final


@pytest.mark.slow
def test_all_interleavings__twenty_repeats__give_the_same_table(tconn: Connection) -> None:
    """Forced orders are deterministic: 20 runs give identical outcome tables."""
    naive = naive_increment(tconn.table_name)
    safe = safe_increment(tconn.table_name)

    def outcome(res: Interleaving) -> dict[str, Any]:
        # both actors return the value they wrote: equal values mean one update was lost
        return {"A": res.results["A"], "B": res.results["B"], "lost_update": res.results["A"] == res.results["B"]}

    tables = []
    for _ in range(20):
        for actor in (naive, safe):
            tables.append(
                all_interleavings(
                    {"A": actor, "B": actor},
                    conn=tconn,
                    setup=lambda: put_counter(tconn),
                    outcome=outcome,
                    calls={"A": 2, "B": 2},
                )
            )
    for i, df in enumerate(tables):
        pd.testing.assert_frame_equal(df, tables[i % 2])
    assert int(tables[0]["lost_update"].sum()) == 4 and int(tables[1]["lost_update"].sum()) == 0


def test_all_interleavings__default_outcome__each_actors_result_or_error_code(
    tconn: Connection,
) -> None:
    """Without outcome=, each actor's column holds its result or its DynamoDB error code."""
    table = tconn.table_name

    def once(client: Any) -> int:
        return conditional_increment(client, table)

    df = all_interleavings({"A": once, "B": once}, conn=tconn, setup=lambda: put_counter(tconn))
    by_order = df.set_index("order")
    assert by_order.loc["A A B B", "A"] == 1 and by_order.loc["A A B B", "B"] == 2
    assert by_order.loc["A B A B", "B"] == "ConditionalCheckFailedException"


def test_all_interleavings__three_actors__every_final_value_matches_a_model(
    tconn: Connection,
) -> None:
    """Two read-modify-write actors and one atomic ADD: 30 orders, each final value as modelled."""
    table = tconn.table_name
    naive = naive_increment(table)

    def atomic_add(client: Any) -> None:
        client.update_item(
            TableName=table, Key=KEY, UpdateExpression="ADD n :one", ExpressionAttributeValues={":one": {"N": "1"}}
        )

    def model(order: str) -> int:
        n, seen, steps = 0, {}, {"A": 0, "B": 0}
        for actor in order.split():
            if actor == "C":
                n += 1
                continue
            if steps[actor] == 0:
                seen[actor] = n
            else:
                n = seen[actor] + 1
            steps[actor] += 1
        return n

    df = all_interleavings(
        {"A": naive, "B": naive, "C": atomic_add},
        conn=tconn,
        setup=lambda: put_counter(tconn),
        outcome=lambda res: {"final": read_counter(tconn)},
    )
    assert df.attrs["calls"] == {"A": 2, "B": 2, "C": 1}
    assert len(df) == 30
    assert list(df["final"]) == [model(order) for order in df["order"]]
    assert set(df["final"]) == {1, 2, 3}


def test_count_calls__actor_without_calls__raises_race_error(tconn: Connection) -> None:
    """An actor that never uses its client has nothing to interleave."""
    with pytest.raises(RaceError, match="made no DynamoDB call"):
        count_calls({"A": lambda client: None}, conn=tconn)


def test_count_calls__actor_raises_when_alone__race_error_says_it_was_the_dry_run(
    tconn: Connection,
) -> None:
    """A broken actor fails already in the dry run, and the message says so."""

    def broken(client: Any) -> None:
        raise TypeError("wrong arguments")

    with pytest.raises(RaceError, match="counting calls, actor 'A' ran alone") as info:
        all_interleavings({"A": broken, "B": broken}, conn=tconn)
    assert isinstance(info.value.__cause__, TypeError)


def test_all_interleavings__calls_missing_an_actor__raises_validation_error(
    tconn: Connection,
) -> None:
    """calls= must give a count for every actor."""
    actor = naive_increment(tconn.table_name)
    with pytest.raises(ValidationError, match=r"no count for actor\(s\) \['B'\]"):
        all_interleavings({"A": actor, "B": actor}, conn=tconn, calls={"A": 2})
