"""The uniqueness tests' shared pieces: ada's email, the test table read back (items, keys, accounts with an
email, one item by key), a client that records its calls, the bad inputs a sign-up refuses, a cancelled
transaction as DynamoDB shapes it, two sign-ups raced in every order, changes made behind labkit's back,
and plain accounts and markers (a healthy table) for the invariants' checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from labkit.patterns import uniqueness as u
from labkit.races import all_interleavings
from labkit.shared.backend import Connection

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


# --- plain items (no table): accounts and their markers, for the invariants' checks (labkit.lab.invariants)


def account(i: str, email: str | None = None, username: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"PK": f"ACCT#{i}", "SK": "PROFILE", "id": i}
    if email is not None:
        item["email"] = email
    if username is not None:
        item["username"] = username
    return item


def marker(ns: str, value: str, owner: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"PK": f"UNIQ#{ns}#{value}", "SK": "LOCK"}
    if owner is not None:
        item["owner"] = owner
    return item


def healthy() -> list[dict[str, Any]]:
    return [
        account("1", "ada@x.io", "ada"),
        marker("EMAIL", "ada@x.io", "1"),
        marker("HANDLE", "ada", "1"),
        account("2", "bob@x.io", "bob"),
        marker("EMAIL", "bob@x.io", "2"),
        marker("HANDLE", "bob", "2"),
    ]
