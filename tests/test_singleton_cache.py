"""The per-process cache of the settings item."""

from __future__ import annotations

import pytest
from singleton_support import Clock, count_calls

from labkit.backend import Connection
from labkit.errors import (
    ValidationError,
)
from labkit.singleton import (
    FlagStore,
)


def test_cache__within_ttl__serves_from_cache_without_a_call(tconn: Connection) -> None:
    """Reads within the TTL are hits; after it, one GetItem again."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, cache_ttl=30, clock=clock)
    store.create()
    calls = count_calls(store)
    first = store.read()
    clock.now += 29
    second = store.read()
    clock.now += 2
    third = store.read()
    assert [first.source, second.source, third.source] == ["item", "cache", "item"]
    assert calls == ["GetItem", "GetItem"]
    assert (store.cache.hits, store.cache.misses) == (1, 2)


def test_cache__invalidate__next_read_goes_to_dynamodb(tconn: Connection) -> None:
    """invalidate() forgets the cached flags; so does a successful write through the store."""
    clock = Clock()
    store = FlagStore(tconn.client, tconn.table_name, clock=clock)
    store.create()
    store.read()
    store.invalidate()
    assert store.read().source == "item"
    store.set_flags(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__defaults__not_cached(tconn: Connection) -> None:
    """A fail-closed read is not cached: the item appearing is seen at once."""
    store = FlagStore(tconn.client, tconn.table_name, clock=Clock())
    assert store.read().source == "defaults"
    FlagStore(tconn.client, tconn.table_name).create(signup_enabled=True)
    res = store.read()
    assert (res.source, res["signup_enabled"]) == ("item", True)


def test_cache__negative_ttl__refused(tconn: Connection) -> None:
    """A negative TTL is a mistake, not 'never cache'."""
    with pytest.raises(ValidationError, match="ttl"):
        FlagStore(tconn.client, tconn.table_name, cache_ttl=-1)
