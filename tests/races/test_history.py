"""Race-history checks: lost updates and stale overwrites in a history."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from labkit.lab.invariants import (
    lost_updates,
    overwrites,
)
from labkit.races import run_interleaving
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError
from tests.races.histories import history


@pytest.mark.parametrize(
    ("successes", "final", "initial", "lost"),
    [(800, 800, 0, 0), (800, 613, 0, 187), (10, 15, 10, 5), (0, 7, 7, 0)],
)
def test_lost_updates__successes_vs_counter__is_the_difference(
    successes: int, final: int, initial: int, lost: int
) -> None:
    """Lost updates = increments that reported success minus how far the counter moved."""
    assert lost_updates(successes, final, initial) == lost


def test_lost_updates__counter_moved_more_than_successes__raises_validation_error() -> None:
    """More movement than successes means miscounting; the error says what to check."""
    with pytest.raises(ValidationError, match="timed-out call may still have been applied"):
        lost_updates(3, 5)


@pytest.mark.parametrize("bad", [1.5, "3", True, None])
def test_lost_updates__non_int__raises_validation_error(bad: Any) -> None:
    """Counts must be ints."""
    with pytest.raises(ValidationError, match="must be an int"):
        lost_updates(bad, 1)


def test_overwrites__read_other_write_own_write__is_one_overwrite() -> None:
    """A reads, B writes, A writes from its stale read: A overwrote B."""
    h = history(
        ("A", 0, "GetItem", "ok", 0, 1),
        ("B", 0, "GetItem", "ok", 1, 2),
        ("B", 1, "PutItem", "ok", 2, 3),
        ("A", 1, "PutItem", "ok", 3, 4),
    )
    assert overwrites(h).to_dict("records") == [
        {"key": "K", "actor": "A", "read_seq": 0, "write_seq": 1, "other_actor": "B", "other_seq": 1}
    ]


@pytest.mark.parametrize(
    "calls",
    [
        # serial: B reads after A's write
        [
            ("A", 0, "GetItem", "ok", 0, 1),
            ("A", 1, "PutItem", "ok", 1, 2),
            ("B", 0, "GetItem", "ok", 2, 3),
            ("B", 1, "PutItem", "ok", 3, 4),
        ],
        # A's stale write was refused by its condition
        [
            ("A", 0, "GetItem", "ok", 0, 1),
            ("B", 0, "UpdateItem", "ok", 1, 2),
            ("A", 1, "UpdateItem", "ConditionalCheckFailedException", 2, 3),
        ],
        # calls that overlap in time are not judged
        [("A", 0, "GetItem", "ok", 0, 2), ("B", 0, "PutItem", "ok", 1, 3), ("A", 1, "PutItem", "ok", 4, 5)],
    ],
)
def test_overwrites__no_stale_write__finds_nothing(calls: list[Any]) -> None:
    """Serial updates, refused stale writes and overlapping calls are not overwrites."""
    assert overwrites(history(*calls)).empty


def test_overwrites__forced_abab_race__finds_the_lost_update(tconn: Connection) -> None:
    """On a real forced ABAB history, B's write overwrites A's."""
    key = {"PK": {"S": "C"}, "SK": {"S": "C"}}
    table = tconn.table_name
    tconn.client.put_item(TableName=table, Item={**key, "n": {"N": "0"}})

    def rmw(client: Any) -> None:
        n = int(client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["N"])
        client.put_item(TableName=table, Item={**key, "n": {"N": str(n + 1)}})

    res = run_interleaving({"A": rmw, "B": rmw}, "ABAB", conn=tconn)
    found = overwrites(res.history)
    assert found[["actor", "read_seq", "write_seq", "other_actor"]].to_dict("records") == [
        {"actor": "B", "read_seq": 0, "write_seq": 1, "other_actor": "A"}
    ]


def test_overwrites__not_a_history__raises_validation_error() -> None:
    """A frame without history columns is refused."""
    with pytest.raises(ValidationError, match="pass res.history"):
        overwrites(pd.DataFrame({"x": [1]}))
