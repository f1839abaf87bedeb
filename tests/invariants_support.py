"""Helpers and fixtures shared by the invariants test files."""

from __future__ import annotations

from typing import Any

import pandas as pd

from labkit.races import HISTORY_COLUMNS


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


def history(*calls: tuple[str, int, str, str, float, float]) -> pd.DataFrame:
    rows = [
        {
            "actor": a,
            "seq": s,
            "turn": None,
            "operation": op,
            "key": "K",
            "start": t0,
            "end": t1,
            "outcome": out,
            "retries": 0,
        }
        for a, s, op, out, t0, t1 in calls
    ]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))
