"""Invariant checks: counters, uniqueness findings, and lost-update shapes in a history."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from labkit.backend import Connection
from labkit.errors import ValidationError
from labkit.invariants import (
    FINDING_COLUMNS,
    Finding,
    check_uniqueness,
    findings_frame,
    lost_updates,
    missing_markers,
    orphan_markers,
    overwrites,
    scan_items,
    several_owners,
)
from labkit.races import HISTORY_COLUMNS, run_interleaving


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
        account("1", "ada@x.io", "ada"), marker("EMAIL", "ada@x.io", "1"),
        marker("HANDLE", "ada", "1"),
        account("2", "bob@x.io", "bob"), marker("EMAIL", "bob@x.io", "2"),
        marker("HANDLE", "bob", "2"),
    ]


# ---------------------------------------------------------------- scan_items


def test_scan_items__many_pages__returns_every_item_with_plain_values(tconn: Connection) -> None:
    """A paginated consistent scan returns every item, numbers as int/float, PK and SK first."""
    client, table = tconn.client, tconn.table_name
    big = "x" * 30_000  # ~30 KB each: 40 items exceed one 1 MB scan page
    for i in range(40):
        client.put_item(TableName=table, Item={
            "PK": {"S": f"ITEM#{i:02d}"}, "SK": {"S": "A"}, "n": {"N": str(i)},
            "half": {"N": "0.5"}, "pad": {"S": big}, "tags": {"SS": ["a", "b"]},
        })
    assert "LastEvaluatedKey" in client.scan(TableName=table)
    df = scan_items(tconn)
    assert list(df.columns[:2]) == ["PK", "SK"]
    assert len(df) == 40
    assert list(df["PK"]) == [f"ITEM#{i:02d}" for i in range(40)]
    assert df["n"].tolist() == list(range(40)) and type(df["n"].tolist()[0]) is int
    assert df["half"].iloc[0] == 0.5 and df["tags"].iloc[0] == {"a", "b"}


def test_scan_items__empty_table__has_pk_and_sk_columns(tconn: Connection) -> None:
    """An empty table scans to an empty frame that still has PK and SK columns."""
    df = scan_items(tconn)
    assert df.empty and list(df.columns) == ["PK", "SK"]


# ---------------------------------------------------------------- lost_updates


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


# ---------------------------------------------------------------- uniqueness


def test_check_uniqueness__healthy_table__has_no_findings() -> None:
    """Every account has its markers and every marker its account: nothing found."""
    findings = check_uniqueness(healthy())
    assert findings.empty
    assert tuple(findings.columns) == FINDING_COLUMNS


def test_several_owners__two_accounts_one_email__reports_the_value_and_both() -> None:
    """The duplicate account of a check-then-write race shows up with both records."""
    items = [*healthy(), account("3", "ada@x.io", "ada2")]
    df = several_owners(items)
    assert df.to_dict("records") == [
        {"attribute": "email", "value": "ada@x.io", "records": ["ACCT#1", "ACCT#3"], "count": 2}
    ]
    assert several_owners(items, "username").empty


def test_several_owners__markers_are_not_records__only_account_prefix_counts() -> None:
    """Only items under record_prefix count as holders."""
    items = [account("1", "a@x.io"), {"PK": "OTHER#1", "SK": "X", "email": "a@x.io"}]
    assert several_owners(items).empty
    assert len(several_owners(items, record_prefix="")) == 1


def test_several_owners__list_values__compared_by_value() -> None:
    """Unhashable values (lists) are compared too, by their repr."""
    items = [{"PK": "ACCT#1", "tags": ["a"]}, {"PK": "ACCT#2", "tags": ["a"]}]
    assert several_owners(items, "tags")["records"].tolist() == [["ACCT#1", "ACCT#2"]]


def test_orphan_markers__owner_gone_or_moved_on__reports_each_with_reason() -> None:
    """Markers left behind by a deleted account, or by an email change, are orphans."""
    items = [
        *healthy(),
        marker("EMAIL", "old@x.io", "1"),     # account 1 changed its email
        marker("HANDLE", "ghost", "9"),       # account 9 was deleted
        marker("EMAIL", "nobody@x.io", None),
        marker("PHONE", "555", "1"),          # a namespace we were not asked about
    ]
    df = orphan_markers(items)
    assert df[["marker", "reason"]].to_dict("records") == [
        {"marker": "UNIQ#EMAIL#nobody@x.io", "reason": "marker has no owner"},
        {"marker": "UNIQ#EMAIL#old@x.io", "reason": "account ACCT#1 holds 'ada@x.io'"},
        {"marker": "UNIQ#HANDLE#ghost", "reason": "account ACCT#9 does not exist"},
    ]


def test_missing_markers__account_without_its_marker__reports_account_and_value() -> None:
    """An account whose value has no marker, or one owned by someone else, is reported."""
    items = [
        *healthy(),
        account("3", "cy@x.io", "bob"),        # no email marker; handle marker belongs to 2
    ]
    df = missing_markers(items)
    assert df[["account", "attribute", "reason"]].to_dict("records") == [
        {"account": "ACCT#3", "attribute": "email", "reason": "no marker UNIQ#EMAIL#cy@x.io"},
        {"account": "ACCT#3", "attribute": "username", "reason": "marker owned by '2'"},
    ]


def test_check_uniqueness__broken_table__one_finding_per_problem_with_kind() -> None:
    """Duplicates, orphans and missing markers all become findings with their kind."""
    items = [
        *healthy(),
        account("3", "ada@x.io", "cy"), marker("HANDLE", "cy", "3"),  # duplicate email
        marker("HANDLE", "ghost", "9"),
    ]
    findings = check_uniqueness(items)
    assert sorted(findings["kind"]) == ["missing_marker", "orphan_marker", "several_owners"]
    dup = findings[findings["kind"] == "several_owners"].iloc[0]
    assert dup["records"] == ("ACCT#1", "ACCT#3") and dup["value"] == "ada@x.io"


def test_check_uniqueness__scan_items_frame__works_like_plain_dicts(tconn: Connection) -> None:
    """The DataFrame from scan_items (missing attributes as NaN) gives the same findings."""
    from boto3.dynamodb.types import TypeSerializer

    ser = TypeSerializer()
    items = [*healthy(), account("3", "ada@x.io")]
    for item in items:
        tconn.client.put_item(TableName=tconn.table_name,
                              Item={k: ser.serialize(v) for k, v in item.items()})
    from_table = check_uniqueness(scan_items(tconn))
    pd.testing.assert_frame_equal(from_table, check_uniqueness(items))
    assert sorted(from_table["kind"]) == ["missing_marker", "several_owners"]


def test_findings_frame__findings__become_rows() -> None:
    """Finding objects turn into a frame notebooks can assert on."""
    df = findings_frame([Finding("several_owners", "email", "a@x.io", ("ACCT#1", "ACCT#2"), "2")])
    assert df.loc[0, "kind"] == "several_owners" and len(df) == 1


def test_checks__item_without_pk__raise_validation_error() -> None:
    """Items must carry a string PK."""
    with pytest.raises(ValidationError, match="has no string PK"):
        check_uniqueness([{"SK": "PROFILE"}])


# ---------------------------------------------------------------- overwrites


def history(*calls: tuple[str, int, str, str, float, float]) -> pd.DataFrame:
    rows = [
        {"actor": a, "seq": s, "turn": None, "operation": op, "key": "K", "start": t0, "end": t1,
         "outcome": out, "retries": 0}
        for a, s, op, out, t0, t1 in calls
    ]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))


def test_overwrites__read_other_write_own_write__is_one_overwrite() -> None:
    """A reads, B writes, A writes from its stale read: A overwrote B."""
    h = history(("A", 0, "GetItem", "ok", 0, 1), ("B", 0, "GetItem", "ok", 1, 2),
                ("B", 1, "PutItem", "ok", 2, 3), ("A", 1, "PutItem", "ok", 3, 4))
    assert overwrites(h).to_dict("records") == [
        {"key": "K", "actor": "A", "read_seq": 0, "write_seq": 1, "other_actor": "B",
         "other_seq": 1}
    ]


@pytest.mark.parametrize(
    "calls",
    [
        # serial: B reads after A's write
        [("A", 0, "GetItem", "ok", 0, 1), ("A", 1, "PutItem", "ok", 1, 2),
         ("B", 0, "GetItem", "ok", 2, 3), ("B", 1, "PutItem", "ok", 3, 4)],
        # A's stale write was refused by its condition
        [("A", 0, "GetItem", "ok", 0, 1), ("B", 0, "UpdateItem", "ok", 1, 2),
         ("A", 1, "UpdateItem", "ConditionalCheckFailedException", 2, 3)],
        # calls that overlap in time are not judged
        [("A", 0, "GetItem", "ok", 0, 2), ("B", 0, "PutItem", "ok", 1, 3),
         ("A", 1, "PutItem", "ok", 4, 5)],
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
