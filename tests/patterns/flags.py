"""The singleton tests' shared pieces (``FlagStore``, the settings item): the safe defaults, two admins racing
(every order, and which changes were lost), a clock the test moves, backoff that does not wait, the calls a
store makes, writes behind the store's back, and the V2 shape of the item."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from labkit.patterns.singleton import (
    FlagStore,
    lost_changes,
    stored_item,
)
from labkit.races import all_interleavings
from labkit.shared.backend import Connection

SAFE = {
    "signup_enabled": False,
    "maintenance_mode": True,
    "ai_search_enabled": False,
    "rate_limit_per_minute": 60,
    "banner_message": "",
}


#: The lesson's race: admin A turns signups on, admin B turns maintenance off.
ADMIN_CHANGES = {"A": {"signup_enabled": True}, "B": {"maintenance_mode": False}}


EXPECTED_AFTER_BOTH = {"signup_enabled": True, "maintenance_mode": False}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def no_sleep(_: float) -> None:
    """Backoff that does not wait (tests stay fast)."""


def count_calls(store: FlagStore) -> list[str]:
    """Record the name of every DynamoDB call the store's client makes from now on."""
    calls: list[str] = []

    def record(model: Any, **_: Any) -> None:
        calls.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", record)
    return calls


def raw_put(store: FlagStore, **attrs: Any) -> None:
    """Write the settings item directly (bypassing labkit), plain Python values."""
    from boto3.dynamodb.types import TypeSerializer

    ser = TypeSerializer()
    item = {"PK": store.pk, "SK": store.sk, **attrs}
    store.client.put_item(TableName=store.table_name, Item={k: ser.serialize(v) for k, v in item.items()})


def competing_writer(store: FlagStore, rival: FlagStore, times: int = 10**6) -> list[int]:
    """Before ``store``'s next ``times`` UpdateItem calls, ``rival`` really bumps the version."""
    bumps: list[int] = []

    def bump(**_: Any) -> None:
        if len(bumps) < times:
            limit = int(rival.read(consistent=True, use_cache=False)["rate_limit_per_minute"])
            bumps.append(rival.set_flags(rate_limit_per_minute=limit + 1).version)

    store.client.meta.events.register("before-call.dynamodb.UpdateItem", bump)
    return bumps


def admins(store: FlagStore, write: Callable[..., Any]) -> dict[str, Callable[[Any], Any]]:
    """Admin A turns signups on, admin B turns maintenance off, each on its own client."""

    def actor(changes: Mapping[str, Any]) -> Callable[[Any], Any]:
        return lambda client: write(store.with_client(client), **changes)

    return {name: actor(changes) for name, changes in ADMIN_CHANGES.items()}


def race_table(tconn: Connection, store: FlagStore, write: Callable[..., Any], *, create_first: bool = True) -> Any:
    """Every order of the two admins; per order, which expected changes were lost."""

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key=store.key)
        if create_first:
            store.create()

    def outcome(_: Any) -> dict[str, Any]:
        item = stored_item(store) or {}
        return {"lost": lost_changes(store, EXPECTED_AFTER_BOTH), "version": item.get("version")}

    return all_interleavings(admins(store, write), conn=tconn, setup=setup, outcome=outcome)


def safe_write(store: FlagStore, **changes: Any) -> Any:
    return store.set_flags(changes)


def to_v2(attrs: dict[str, Any]) -> dict[str, Any]:
    """V2 shape: the three feature flags move into one map, plus a new flag."""
    return {
        "features": {k: attrs[k] for k in ("signup_enabled", "ai_search_enabled")},
        "maintenance_mode": attrs["maintenance_mode"],
        "rate_limit_per_minute": attrs["rate_limit_per_minute"],
        "dark_launch": False,
    }


def raise_limit(flags: Any) -> dict[str, Any]:
    """An admin raises the rate limit by 10 from what they read."""
    return {"rate_limit_per_minute": flags["rate_limit_per_minute"] + 10}


def limit_race(tconn: Connection, store: FlagStore, write: Callable[..., Any]) -> Any:
    """Both admins raise the limit by 10 (60 -> 80 expected), every order."""

    def setup() -> None:
        tconn.client.delete_item(TableName=store.table_name, Key=store.key)
        store.create()

    actors = {n: (lambda client: write(store.with_client(client))) for n in ("A", "B")}
    return all_interleavings(
        actors,
        conn=tconn,
        setup=setup,
        outcome=lambda _: stored_item(store)["rate_limit_per_minute"],  # type: ignore[index]
    )
