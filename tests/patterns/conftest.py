"""Helpers and fixtures shared by the lesson patterns' test files: singleton (FlagStore) and uniqueness."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from botocore.exceptions import ClientError

from labkit.patterns import uniqueness as u
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


@pytest.fixture
def store(tconn: Connection) -> FlagStore:
    return FlagStore(tconn.client, tconn.table_name, sleep=no_sleep)


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


# --- uniqueness

ADA = "ada@lovelace.io"


def items(tconn: Connection) -> list[dict[str, Any]]:
    """Every item in the test table, plain values, sorted by key."""
    return [
        {str(k): v for k, v in row.items()} for row in u.table_items(tconn.client, tconn.table_name).to_dict("records")
    ]


def keys(tconn: Connection) -> list[str]:
    return sorted(str(row["PK"]) for row in items(tconn))


def accounts_with_email(tconn: Connection, email: str) -> int:
    return sum(1 for row in items(tconn) if str(row["PK"]).startswith("ACCT#") and row.get("email") == email)


def counting_client(tconn: Connection) -> tuple[Any, list[str]]:
    """A client that records every DynamoDB call it makes."""
    client = tconn.new_client()
    calls: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    return client, calls


BAD_INPUT: list[tuple[str, dict[str, Any], str]] = [
    ("empty email", {"email": "  ", "username": "ada"}, "email is empty"),
    ("no @", {"email": "ada.lovelace.io", "username": "ada"}, "exactly one '@'"),
    ("two @", {"email": "ada@@lovelace.io", "username": "ada"}, "exactly one '@'"),
    ("no local part", {"email": "@lovelace.io", "username": "ada"}, "nothing before the '@'"),
    ("domain without dot", {"email": "ada@lovelace", "username": "ada"}, "domain with a dot"),
    ("domain dot at end", {"email": "ada@lovelace.", "username": "ada"}, "domain with a dot"),
    ("whitespace inside", {"email": "ada @lovelace.io", "username": "ada"}, "whitespace"),
    ("email over 254", {"email": "a" * 250 + "@b.io", "username": "ada"}, "over the 254"),
    ("empty username", {"email": ADA, "username": " "}, "username is empty"),
    ("username too long for a key", {"email": ADA, "username": "x" * 2040}, "2,048-byte"),
    ("multibyte username too long", {"email": ADA, "username": "é" * 1020}, "2,048-byte"),
    (
        "unknown field",
        {"email": ADA, "username": "ada", "nick": "a"},
        "unknown unique field 'nick'",
    ),
    ("missing field", {"email": ADA}, "missing username"),
    ("token too long", {"email": ADA, "username": "ada", "token": "t" * 37}, "1-36 characters"),
    (
        "attributes set a key",
        {"email": ADA, "username": "ada", "attributes": {"PK": "x"}},
        "may not set PK",
    ),
]


def cancelled(*codes: str) -> ClientError:
    """A TransactionCanceledException shaped as DynamoDB documents it."""
    reasons = [{"Code": c, "Message": f"{c} message"} if c != "None" else {"Code": c} for c in codes]
    return ClientError(
        {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": f"Transaction cancelled, please refer cancellation reasons for "
                f"specific reasons [{', '.join(codes)}]",
            },
            "CancellationReasons": reasons,  # type: ignore[typeddict-item]
        },
        "TransactWriteItems",
    )


def slots() -> list[Any]:
    return u.prepare_registration(email=ADA, username="ada")._slots()


def two_signups(tconn: Connection, sign_up: Callable[[Any, str], Any]) -> Any:
    """All six orders of two sign-ups for ada@lovelace.io; column duplicate per order."""
    table = tconn.table_name

    def setup() -> None:
        for row in items(tconn):
            tconn.client.delete_item(TableName=table, Key={"PK": {"S": row["PK"]}, "SK": {"S": row["SK"]}})

    return all_interleavings(
        {"A": lambda c: sign_up(c, "ada"), "B": lambda c: sign_up(c, "countess")},
        conn=tconn,
        setup=setup,
        outcome=lambda res: {"accounts": accounts_with_email(tconn, ADA)},
    )


def drop(tconn: Connection, pk: str, sk: str) -> None:
    """Delete one item behind labkit's back (the bug the audit exists for)."""
    tconn.client.delete_item(TableName=tconn.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}})


def set_email(tconn: Connection, account_id: str, email: str) -> None:
    """Change an account's email behind labkit's back, leaving its markers as they are."""
    tconn.client.update_item(
        TableName=tconn.table_name,
        Key={"PK": {"S": f"ACCT#{account_id}"}, "SK": {"S": "PROFILE"}},
        UpdateExpression="SET email = :e",
        ExpressionAttributeValues={":e": {"S": email}},
    )


#: Composite uniqueness: a username across the site, an email once per tenant.
TENANT_FIELDS: dict[str | tuple[str, ...], str] = {"username": "HANDLE", ("tenant", "email"): "TENANT_EMAIL"}


def stored(tconn: Connection, pk: str, sk: str = "LOCK") -> dict[str, Any] | None:
    """One item by key (strongly consistent), plain values, or None."""
    from labkit.shared.codec import from_wire

    out = tconn.client.get_item(TableName=tconn.table_name, Key={"PK": {"S": pk}, "SK": {"S": sk}}, ConsistentRead=True)
    return from_wire(out["Item"]) if "Item" in out else None
