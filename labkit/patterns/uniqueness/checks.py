"""Uniqueness invariants on the table's final state, turned into findings.

The uniqueness data model (see :mod:`labkit.shared.constants`)::

    PK                            SK       attributes
    ACCT#<id>                     PROFILE  id, email, username, ...
    UNIQ#EMAIL#<email>            LOCK     owner=<id>
    UNIQ#HANDLE#<username>        LOCK     owner=<id>

Values are compared exactly as stored: the writer normalises them (trim, case-fold)
before it writes account and marker. Every check returns a DataFrame with one row per
problem, so a lesson ends in ``assert findings.empty`` — or, before the fix, in
``assert not findings.empty``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ...shared import constants as C
from ...shared.errors import ValidationError
from .keys import DEFAULT_FIELDS, Fields, FieldSpec, field_value, label

#: Unique attribute -> marker namespace (the same map as :data:`~labkit.patterns.uniqueness.DEFAULT_FIELDS`).
DEFAULT_NAMESPACES: Mapping[FieldSpec, str] = DEFAULT_FIELDS
#: Columns of :func:`check_uniqueness`'s findings.
FINDING_COLUMNS = ("kind", "attribute", "value", "records", "detail")

Items = pd.DataFrame | Iterable[Mapping[str, Any]]


def _records(items: Items) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]]
    if isinstance(items, pd.DataFrame):
        rows = [{str(k): v for k, v in r.items()} for r in items.to_dict("records")]
    else:
        rows = [dict(item) for item in items]
    out = []
    for row in rows:
        if not isinstance(row.get("PK"), str):
            raise ValidationError(f"item {row!r} has no string PK; pass scan_items(conn) or plain item dicts")
        out.append({str(k): v for k, v in row.items() if not _missing(v)})
    return out


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


# ---------------------------------------------------------------- uniqueness


def _accounts(rows: list[dict[str, Any]], prefix: str = C.ACCOUNT_PREFIX) -> list[dict[str, Any]]:
    return [r for r in rows if r["PK"].startswith(prefix) and r.get("SK", C.ACCOUNT_SK) == C.ACCOUNT_SK]


def _account_id(row: Mapping[str, Any], prefix: str = C.ACCOUNT_PREFIX) -> str:
    return str(row["PK"][len(prefix) :])


def _markers(rows: list[dict[str, Any]], namespaces: Mapping[str, str]) -> list[dict[str, Any]]:
    """Marker rows, each with namespace, attribute and value parsed from its PK."""
    attribute_of = {ns: attr for attr, ns in namespaces.items()}
    out = []
    for r in rows:
        if not r["PK"].startswith(C.MARKER_PREFIX) or r.get("SK", C.MARKER_SK) != C.MARKER_SK:
            continue
        namespace, _, value = r["PK"][len(C.MARKER_PREFIX) :].partition("#")
        if namespace in attribute_of:
            out.append({**r, "namespace": namespace, "attribute": attribute_of[namespace], "value": value})
    return out


def expand_rows(items: Items, namespaces: Fields) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The items as rows and a label -> namespace map; an account row gets each composite's value under its label."""
    if not namespaces:
        raise ValidationError("namespaces is empty; pass e.g. {'email': 'EMAIL'}")
    rows = _records(items)
    composites = [spec for spec in namespaces if not isinstance(spec, str)]
    for row in rows:
        if composites and row["PK"].startswith(C.ACCOUNT_PREFIX):
            row.update({label(s): v for s in composites if (v := field_value(s, row)) is not None})
    return rows, {label(spec): ns for spec, ns in namespaces.items()}


def several_owners(items: Items, attribute: str = "email", record_prefix: str = C.ACCOUNT_PREFIX) -> pd.DataFrame:
    """Values of ``attribute`` held by more than one record: attribute, value, records, count."""
    holders: dict[Any, set[str]] = {}
    for row in _records(items):
        if row["PK"].startswith(record_prefix) and attribute in row:
            value = row[attribute]
            if isinstance(value, list | dict | set):  # unhashable: compare by its repr
                value = repr(value)
            holders.setdefault(value, set()).add(row["PK"])
    rows = [
        {"attribute": attribute, "value": value, "records": sorted(pks), "count": len(pks)}
        for value, pks in holders.items()
        if len(pks) > 1
    ]
    df = pd.DataFrame(rows, columns=["attribute", "value", "records", "count"])
    return df.sort_values("value", kind="stable").reset_index(drop=True)


def orphan_markers(items: Items, namespaces: Fields = DEFAULT_NAMESPACES) -> pd.DataFrame:
    """Markers whose owner is missing, gone, or no longer holds the value.

    ``kind`` is ``ownerless_marker`` (no ``owner`` attribute; ``holders`` lists the accounts that
    hold its value) or ``orphan_marker`` (the owner account is gone or holds another value).
    """
    rows, labels = expand_rows(items, namespaces)
    accounts = {_account_id(a): a for a in _accounts(rows)}
    found = []
    for m in _markers(rows, labels):
        owner = m.get("owner")
        account = accounts.get(str(owner)) if owner is not None else None
        holders: list[str] = []
        if owner is None:
            kind, reason = "ownerless_marker", "marker has no owner"
            holders = sorted(a["PK"] for a in accounts.values() if a.get(m["attribute"]) == m["value"])
            if holders:
                reason += f"; held by {', '.join(holders)}"
        elif account is None:
            kind, reason = "orphan_marker", f"account {C.ACCOUNT_PREFIX}{owner} does not exist"
        elif account.get(m["attribute"]) != m["value"]:
            kind, reason = "orphan_marker", f"account {C.ACCOUNT_PREFIX}{owner} holds {account.get(m['attribute'])!r}"
        else:
            continue
        found.append(
            {
                "marker": m["PK"],
                "kind": kind,
                "namespace": m["namespace"],
                "attribute": m["attribute"],
                "value": m["value"],
                "owner": owner,
                "holders": holders,
                "reason": reason,
            }
        )
    columns = ["marker", "kind", "namespace", "attribute", "value", "owner", "holders", "reason"]
    return pd.DataFrame(found, columns=columns).sort_values("marker").reset_index(drop=True)


def missing_markers(items: Items, namespaces: Fields = DEFAULT_NAMESPACES) -> pd.DataFrame:
    """Accounts whose value is not protected by a marker of their own.

    ``kind`` is ``missing_marker`` (no marker item for the value) or ``marker_owned_by_other``
    (the marker belongs to another account). A marker that exists without an owner is not
    reported here: :func:`orphan_markers` reports it once, as ``ownerless_marker``.
    """
    rows, labels = expand_rows(items, namespaces)
    markers = {(m["namespace"], m["value"]): m for m in _markers(rows, labels)}
    found = []
    for account in _accounts(rows):
        me = _account_id(account)
        for attribute, namespace in labels.items():
            if attribute not in account:
                continue
            value = account[attribute]
            marker = markers.get((namespace, value))
            if marker is None:
                kind, reason = "missing_marker", f"no marker {C.MARKER_PREFIX}{namespace}#{value}"
            elif marker.get("owner") is None or str(marker["owner"]) == me:
                continue
            else:
                kind, reason = "marker_owned_by_other", f"marker owned by {C.ACCOUNT_PREFIX}{marker['owner']}"
            found.append(
                {
                    "account": account["PK"],
                    "kind": kind,
                    "attribute": attribute,
                    "value": value,
                    "namespace": namespace,
                    "reason": reason,
                }
            )
    columns = ["account", "kind", "attribute", "value", "namespace", "reason"]
    return pd.DataFrame(found, columns=columns).sort_values(["account", "attribute"]).reset_index(drop=True)


@dataclass(frozen=True)
class Finding:
    """One broken invariant: its kind, the attribute and value involved, the records, a note."""

    kind: str
    attribute: str
    value: Any
    records: tuple[str, ...]
    detail: str


def findings_frame(findings: Iterable[Finding]) -> pd.DataFrame:
    """Findings as a DataFrame with columns kind, attribute, value, records, detail."""
    return pd.DataFrame([asdict(f) for f in findings], columns=list(FINDING_COLUMNS))


def check_uniqueness(items: Items, namespaces: Fields = DEFAULT_NAMESPACES) -> pd.DataFrame:
    """Every uniqueness finding, one row per problem.

    Kinds: ``several_owners`` (a value held by more than one account), ``orphan_marker`` (its owner
    is gone or holds another value), ``ownerless_marker`` (a marker without ``owner``),
    ``missing_marker`` (an account's value has no marker item) and ``marker_owned_by_other``
    (the value's marker belongs to another account).
    """
    rows, labels = expand_rows(items, namespaces)
    found: list[Finding] = []
    for attribute in labels:
        for d in several_owners(rows, attribute).to_dict("records"):
            found.append(
                Finding(
                    "several_owners",
                    attribute,
                    d["value"],
                    tuple(d["records"]),
                    f"{d['count']} accounts hold {attribute} {d['value']!r}",
                )
            )
    for d in orphan_markers(rows, namespaces).to_dict("records"):
        found.append(Finding(str(d["kind"]), str(d["attribute"]), d["value"], (str(d["marker"]),), str(d["reason"])))
    for d in missing_markers(rows, namespaces).to_dict("records"):
        found.append(Finding(str(d["kind"]), str(d["attribute"]), d["value"], (str(d["account"]),), str(d["reason"])))
    return findings_frame(found)


# ---------------------------------------------------------------- histories


__all__ = [
    "FINDING_COLUMNS",
    "Finding",
    "check_uniqueness",
    "expand_rows",
    "findings_frame",
    "missing_markers",
    "orphan_markers",
    "several_owners",
]
