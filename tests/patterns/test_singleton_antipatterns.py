"""The singleton anti-patterns, kept for the lesson, do what the lesson says."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.patterns.singleton import (
    FlagStore,
    stored_item,
    unsafe_scan_read,
    unsafe_set_flags,
    unsafe_update,
)
from labkit.shared.backend import Connection
from labkit.shared.errors import (
    UnknownFlag,
)
from tests.patterns.flags import SAFE, count_calls, limit_race, raise_limit


def test_unsafe_set_flags__alone__writes_whole_item(store: FlagStore) -> None:
    """The anti-pattern works when nobody else writes: GetItem then an unconditioned PutItem."""
    store.create()
    calls = count_calls(store)
    version = unsafe_set_flags(store, signup_enabled=True)
    assert (calls, version) == (["GetItem", "PutItem"], 2)
    assert stored_item(store)["signup_enabled"] is True  # type: ignore[index]


def test_unsafe_set_flags__bad_input__rejected_before_any_call(store: FlagStore) -> None:
    """Even the anti-pattern validates input first."""
    calls = count_calls(store)
    with pytest.raises(UnknownFlag):
        unsafe_set_flags(store, nope=True)
    assert calls == []


def test_unsafe_scan_read__reads_every_item_to_return_one(store: FlagStore) -> None:
    """Scan + filter finds the singleton, but examines every item in the table."""
    store.create(signup_enabled=True)
    requests: list[Any] = [
        {"PutRequest": {"Item": {"PK": {"S": f"USER#{i}"}, "SK": {"S": "PROFILE"}}}} for i in range(60)
    ]
    for start in range(0, 60, 25):
        store.client.batch_write_item(RequestItems={store.table_name: requests[start : start + 25]})
    scan = unsafe_scan_read(store)
    get = store.read(use_cache=False)
    assert (scan.source, scan["signup_enabled"], scan.items_read) == ("item", True, 61)
    assert dict(scan.flags) == dict(get.flags) and get.items_read == 1


def test_unsafe_scan_read__no_item__defaults(store: FlagStore) -> None:
    """Scan that finds nothing also fails closed."""
    res = unsafe_scan_read(store)
    assert (res.source, dict(res.flags)) == ("defaults", SAFE)


def test_unsafe_update__two_admins_raise_same_limit__one_raise_lost_in_4_of_6(
    tconn: Connection, store: FlagStore
) -> None:
    """Read-modify-write: both read 60, both write 70."""
    df = limit_race(tconn, store, lambda s: unsafe_update(s, raise_limit))
    assert sorted(df["outcome"]) == [70, 70, 70, 70, 80, 80]
