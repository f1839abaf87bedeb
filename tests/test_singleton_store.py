"""FlagStore's writes are safe to retry: a lost answer is resolved, never applied twice."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.backend import Connection
from labkit.errors import ItemTooLarge, OutcomeUnknown
from labkit.singleton import FlagStore, stored_item
from labkit.uniqueness import lose_next_response


def flaky_store(tconn: Connection) -> tuple[FlagStore, Any]:
    client = tconn.new_client(retries={"max_attempts": 1, "mode": "standard"})
    return FlagStore(client, tconn.table_name, sleep=lambda _: None), client


def test_set_flags__response_lost__applied_once_and_reported_as_success(tconn: Connection) -> None:
    """The UpdateItem is applied but its answer lost: set_flags succeeds with version 2, not an error."""
    store, client = flaky_store(tconn)
    store.create()
    lose_next_response(client, "UpdateItem")
    result = store.set_flags(rate_limit_per_minute=12)
    assert (result.version, result.flags["rate_limit_per_minute"]) == (2, 12)
    item = stored_item(store)
    assert item is not None and (item["version"], item["rate_limit_per_minute"]) == (2, 12)


def test_update__response_lost__change_applied_exactly_once(tconn: Connection) -> None:
    """update(+10) whose answer is lost ends at 70 (60 + 10), not 80: the version guard knows its own write."""
    store, client = flaky_store(tconn)
    store.create()
    lose_next_response(client, "UpdateItem")
    result = store.update(lambda f: {"rate_limit_per_minute": int(f["rate_limit_per_minute"]) + 10})
    item = stored_item(store)
    assert item is not None and (item["rate_limit_per_minute"], item["version"]) == (70, 2)
    assert result.version == 2


def test_update__response_lost_then_rival_writes__outcome_unknown_not_reapplied(tconn: Connection) -> None:
    """Answer lost AND a rival wrote on top: labkit cannot tell, so it says OutcomeUnknown and writes no more."""
    store, client = flaky_store(tconn)
    store.create()
    rival = FlagStore(tconn.new_client(), tconn.table_name)
    fired: list[int] = []

    def rival_writes(**_: Any) -> None:
        if not fired:
            fired.append(rival.set_flags(banner_message="rival").version)

    client.meta.events.register("after-call.dynamodb.UpdateItem", rival_writes)
    lose_next_response(client, "UpdateItem")
    with pytest.raises(OutcomeUnknown, match="cannot tell") as info:
        store.update(lambda f: {"rate_limit_per_minute": int(f["rate_limit_per_minute"]) + 10})
    assert info.value.__cause__ is not None
    item = stored_item(store)
    assert item is not None and (item["rate_limit_per_minute"], item["version"]) == (70, 3)


def test_create__response_lost__succeeds_once(tconn: Connection) -> None:
    """create() whose PutItem answer is lost recognises its own item instead of saying 'already exists'."""
    store, client = flaky_store(tconn)
    lose_next_response(client, "PutItem")
    result = store.create(signup_enabled=True)
    assert (result.version, result.created) == (1, True)
    assert stored_item(store)["signup_enabled"] is True  # type: ignore[index]


def test_set_flags__item_over_endpoint_limit__item_too_large_nothing_written(tconn: Connection) -> None:
    """A value that makes the item ~406 KB: labkit's ItemTooLarge (never a raw ValidationException)."""
    store, _ = flaky_store(tconn)
    store.create()
    with pytest.raises(ItemTooLarge):
        store.set_flags(banner_message="x" * 406_000)
    assert stored_item(store)["banner_message"] == ""  # type: ignore[index]
