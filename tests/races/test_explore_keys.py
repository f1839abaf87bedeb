"""The issue's own case: a table keyed ``id``, three read-modify-write actors of three calls.

With item identity guessed from the attributes a request carried, PutItem ``{id: x, visits: 1}``
and GetItem ``{id: x}`` looked like two items: DPOR ran 1 order and said "all non-equivalent
orders explored" while most orders lose an update. Named from the table's KeySchema they are one
item: DPOR finds the lost update, and the version-guarded version passes — a guarantee the
slow check confirms against exhaustive search (the same final states).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from labkit.races import Interleaving, explore
from labkit.shared.backend import Connection
from tests.helpers import hash_key_table
from tests.races.counters import Counter


@pytest.fixture
def visits(conn: Connection) -> Iterator[str]:
    """A table keyed ``id`` (not PK/SK), as ordinary team code has it."""
    with hash_key_table(conn.client, "visits", "id") as name:
        yield name


def page(table: str) -> Counter:
    """The audited counter (tests/races/counters.py) in the ``id`` table: the visits of ``page-1``,
    each actor's audit item ``log-<actor>``."""
    return Counter(table, {"id": {"S": "page-1"}}, lambda name: {"id": {"S": f"log-{name}"}}, count="visits")


def test_table_keyed_id__three_read_modify_write_actors__dpor_finds_the_lost_update(
    conn: Connection, visits: str
) -> None:
    """GetItem, PutItem of the whole item (visits + 1), PutItem of its own log item: DPOR sees one item."""
    counter = page(visits)
    result = counter.explore(conn, counter.lost_update, strategy="dpor")
    assert not result.passed, result.summary()
    assert result.calls == {"A": 3, "B": 3, "C": 3}
    assert result.message is not None and "an update was lost" in result.message
    assert result.interleaving is not None  # the key schema was asked outside the actors' turns
    assert "DescribeTable" not in set(result.interleaving.history["operation"])


def test_table_keyed_id__version_guarded__dpor_passes_every_class(conn: Connection, visits: str) -> None:
    """UpdateItem only if the version is the one read: a loser ends with CCF, no update is lost."""
    counter = page(visits)
    result = counter.explore(conn, counter.version_guarded, strategy="dpor")
    assert result.passed, result.summary()
    assert result.guarantee == f"all non-equivalent orders explored (DPOR): {result.runs} runs"
    assert result.runs > 6  # every order of the three conditional updates, at least


@pytest.mark.slow
def test_table_keyed_id__version_guarded__dpor_reaches_every_state_exhaustive_search_reaches(
    conn: Connection, visits: str
) -> None:
    """The guarantee is true: DPOR's runs end in every final state of every schedule."""
    counter = page(visits)
    actors = counter.actors(counter.version_guarded)
    states: dict[str, set[Any]] = {"exhaustive": set(), "dpor": set()}
    for strategy, seen in states.items():

        def record(res: Interleaving, seen: set[Any] = seen) -> None:
            items = conn.client.scan(TableName=visits, ConsistentRead=True)["Items"]
            seen.add((tuple(sorted(str(sorted(i.items())) for i in items)), tuple(sorted(res.error_codes().items()))))

        result = explore(
            actors,
            conn=conn,
            setup=lambda: counter.reset(conn.client),
            invariant=record,
            strategy=strategy,
            budget=5000,
        )
        assert result.passed
    assert states["dpor"] == states["exhaustive"]
