"""The singleton under forced interleavings and stress (the lesson's races, against labkit.patterns.singleton)."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.patterns.singleton import (
    Flag,
    FlagSchema,
    FlagStore,
    exponential_jitter,
    lost_changes,
    stored_item,
    unsafe_set_flags,
)
from labkit.races import run_interleaving, stress
from labkit.shared.backend import Connection
from tests.patterns.flags import EXPECTED_AFTER_BOTH, admins, race_table, safe_write


@pytest.mark.aws_verified
def test_race__read_modify_write__loses_an_update_in_4_of_6_orders(tconn: Connection, store: FlagStore) -> None:
    """Two admins, different flags, GetItem+PutItem: every overlapping order loses one change."""
    df = race_table(tconn, store, unsafe_set_flags)
    lost = df[df["lost"].map(len) > 0]
    assert len(df) == 6 and len(lost) == 4
    assert set(lost["order"]) == {"A B A B", "A B B A", "B A A B", "B A B A"}
    assert set(df.loc[df["lost"].map(len) == 0, "order"]) == {"A A B B", "B B A A"}
    assert set(lost["version"]) == {2}  # two changes, one bump: the loss is visible


@pytest.mark.aws_verified
def test_race__safe_update__loses_nothing_in_all_6_orders(tconn: Connection, store: FlagStore) -> None:
    """Version-guarded UpdateItem on the same 6 orders: both changes always survive."""
    df = race_table(tconn, store, safe_write)
    assert len(df) == 6
    assert df["lost"].map(len).sum() == 0
    assert set(df["version"]) == {3}


def test_race__two_first_writers__creation_guarded_nothing_lost(tconn: Connection, store: FlagStore) -> None:
    """Both admins find no item and both try to create it: one creates, the other updates."""
    df = race_table(tconn, store, safe_write, create_first=False)
    assert len(df) == 6
    assert df["lost"].map(len).sum() == 0
    assert set(df["version"]) == {2}


def test_race__overlapping_safe_update__loser_sees_conditional_check_failed(
    tconn: Connection, store: FlagStore
) -> None:
    """In A B A B the second writer's first UpdateItem fails its condition, then it retries."""
    store.create()
    res = run_interleaving(admins(store, safe_write), "ABAB", conn=tconn)
    outcomes = list(res.history["outcome"])
    assert outcomes[:4] == ["ok", "ok", "ok", "ConditionalCheckFailedException"]
    assert (res.results["A"].attempts, res.results["B"].attempts) == (1, 2)
    assert lost_changes(store, EXPECTED_AFTER_BOTH) == []


@pytest.mark.aws_verified
def test_stress__16_threads_safe_updates_to_different_flags__none_lost(tconn: Connection) -> None:
    """16 writers at once, each turning on its own flag: all 16 are on, version 1 + 16."""
    schema = FlagSchema(tuple(Flag(f"feature_{i:02d}", bool, False) for i in range(16)))
    store = FlagStore(
        tconn.client,
        tconn.table_name,
        schema=schema,
        max_attempts=100,
        backoff=exponential_jitter(base=0.001, cap=0.02),
    )
    store.create()

    def op(client: Any, worker: int, seq: int) -> int:
        return store.with_client(client).set_flags({f"feature_{worker:02d}": True}).attempts

    df = stress(op, conn=tconn, threads=16, ops=1)
    item = stored_item(store)
    assert item is not None
    assert bool(df["ok"].all()) and len(df) == 16
    assert lost_changes(store, {f.name: True for f in schema.flags}) == []
    assert item["version"] == 17
