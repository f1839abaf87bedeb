"""Uniqueness invariants on the table's final state."""

from __future__ import annotations

import pandas as pd
import pytest

from labkit.lab.invariants import (
    FINDING_COLUMNS,
    Finding,
    check_uniqueness,
    findings_frame,
    missing_markers,
    orphan_markers,
    scan_items,
    several_owners,
)
from labkit.shared.backend import Connection
from labkit.shared.errors import ValidationError
from tests.patterns.signups import account, healthy, marker


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
        marker("EMAIL", "old@x.io", "1"),  # account 1 changed its email
        marker("HANDLE", "ghost", "9"),  # account 9 was deleted
        marker("EMAIL", "nobody@x.io", None),
        marker("PHONE", "555", "1"),  # a namespace we were not asked about
    ]
    df = orphan_markers(items)
    assert df[["marker", "kind", "reason"]].to_dict("records") == [
        {"marker": "UNIQ#EMAIL#nobody@x.io", "kind": "ownerless_marker", "reason": "marker has no owner"},
        {"marker": "UNIQ#EMAIL#old@x.io", "kind": "orphan_marker", "reason": "account ACCT#1 holds 'ada@x.io'"},
        {"marker": "UNIQ#HANDLE#ghost", "kind": "orphan_marker", "reason": "account ACCT#9 does not exist"},
    ]


def test_ownerless_marker__value_held_by_an_account__one_finding_from_the_marker_side() -> None:
    """A marker without owner is ONE finding, ownerless_marker, naming the account that holds the value."""
    items = [account("1", "ada@x.io", "ada"), marker("EMAIL", "ada@x.io", None), marker("HANDLE", "ada", "1")]
    assert missing_markers(items).empty
    findings = check_uniqueness(items)
    assert findings[["kind", "attribute", "value", "records", "detail"]].to_dict("records") == [
        {
            "kind": "ownerless_marker",
            "attribute": "email",
            "value": "ada@x.io",
            "records": ("UNIQ#EMAIL#ada@x.io",),
            "detail": "marker has no owner; held by ACCT#1",
        }
    ]
    assert orphan_markers(items)["holders"].tolist() == [["ACCT#1"]]


def test_missing_markers__account_without_its_marker__reports_account_and_value() -> None:
    """An account whose value has no marker, or one owned by someone else, is reported."""
    items = [
        *healthy(),
        account("3", "cy@x.io", "bob"),  # no email marker; handle marker belongs to 2
    ]
    df = missing_markers(items)
    assert df[["account", "kind", "attribute", "reason"]].to_dict("records") == [
        {"account": "ACCT#3", "kind": "missing_marker", "attribute": "email", "reason": "no marker UNIQ#EMAIL#cy@x.io"},
        {
            "account": "ACCT#3",
            "kind": "marker_owned_by_other",
            "attribute": "username",
            "reason": "marker owned by ACCT#2",
        },
    ]


def test_check_uniqueness__broken_table__one_finding_per_problem_with_kind() -> None:
    """Duplicates, orphans and missing markers all become findings with their kind."""
    items = [
        *healthy(),
        account("3", "ada@x.io", "cy"),
        marker("HANDLE", "cy", "3"),  # duplicate email
        marker("HANDLE", "ghost", "9"),
    ]
    findings = check_uniqueness(items)
    assert sorted(findings["kind"]) == ["marker_owned_by_other", "orphan_marker", "several_owners"]
    dup = findings[findings["kind"] == "several_owners"].iloc[0]
    assert dup["records"] == ("ACCT#1", "ACCT#3") and dup["value"] == "ada@x.io"


def test_check_uniqueness__scan_items_frame__works_like_plain_dicts(tconn: Connection) -> None:
    """The DataFrame from scan_items (missing attributes as NaN) gives the same findings."""
    from boto3.dynamodb.types import TypeSerializer

    ser = TypeSerializer()
    items = [*healthy(), account("3", "ada@x.io")]
    for item in items:
        tconn.client.put_item(TableName=tconn.table_name, Item={k: ser.serialize(v) for k, v in item.items()})
    from_table = check_uniqueness(scan_items(tconn))
    pd.testing.assert_frame_equal(from_table, check_uniqueness(items))
    assert sorted(from_table["kind"]) == ["marker_owned_by_other", "several_owners"]


def test_findings_frame__findings__become_rows() -> None:
    """Finding objects turn into a frame notebooks can assert on."""
    df = findings_frame([Finding("several_owners", "email", "a@x.io", ("ACCT#1", "ACCT#2"), "2")])
    assert df.loc[0, "kind"] == "several_owners" and len(df) == 1


def test_checks__item_without_pk__raise_validation_error() -> None:
    """Items must carry a string PK."""
    with pytest.raises(ValidationError, match="has no string PK"):
        check_uniqueness([{"SK": "PROFILE"}])
