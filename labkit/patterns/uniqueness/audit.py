"""Audit and repair: find orphan, missing and shared markers; fix each with its own guarded transaction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
from boto3.dynamodb.conditions import Attr

from ...shared import constants as C
from ...shared.codec import to_wire
from ...shared.errors import (
    ConflictError,
    TransactionCancelled,
    ValueTaken,
)
from . import checks
from .inspect import table_items
from .keys import (
    DEFAULT_FIELDS,
    Fields,
    FieldSpec,
    account_key,
    check_fields,
    check_token,
    condition_params,
    holds,
    marker_item,
    marker_key,
    spec_of,
    split_parts,
)
from .reasons import Slot, transact

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit` found; each frame has one row per problem (from labkit.lab.invariants)."""

    orphan_markers: pd.DataFrame
    missing_markers: pd.DataFrame
    several_owners: pd.DataFrame
    findings: pd.DataFrame

    @property
    def ok(self) -> bool:
        """True when every marker has a live owner holding its value, and every value a marker."""
        return bool(self.findings.empty)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        """The findings table with every column in full (no "..." in ``detail``)."""
        if self.ok:
            return "<p>audit: no findings</p>"
        with pd.option_context("display.max_colwidth", None):
            return str(self.findings.to_html(index=False))

    def frame(self, name: str = "findings") -> str:
        """One of the report's frames as text, columns in full (``reason`` is never cut)."""
        with pd.option_context("display.max_colwidth", None, "display.width", None):
            return str(getattr(self, name).to_string(index=False))

    def summary(self) -> str:
        """One line per finding, or "audit: no findings"."""
        if self.ok:
            return "audit: no findings"
        lines = [f"audit: {len(self.findings)} finding(s)"]
        for row in self.findings.itertuples(index=False):
            lines.append(f"  {row.kind}: {row.attribute} {row.value!r} — {row.detail}")
        return "\n".join(lines)


def audit(client: DynamoDBClient, table: str, *, fields: Fields = DEFAULT_FIELDS) -> AuditReport:
    """Scan the table and report orphan markers, missing markers and values with several owners."""
    fields = check_fields(fields)
    items = table_items(client, table)
    if items.empty:
        items = pd.DataFrame(columns=["PK", "SK"])
    rows, labels = checks.expand_rows(items, fields)
    owners = [checks.several_owners(rows, f) for f in labels]
    return AuditReport(
        orphan_markers=checks.orphan_markers(items, fields),
        missing_markers=checks.missing_markers(items, fields),
        several_owners=pd.concat(owners, ignore_index=True) if owners else pd.DataFrame(),
        findings=checks.check_uniqueness(items, fields),
    )


@dataclass
class RepairReport:
    """What :func:`repair` did: markers deleted and created, and what it refused to touch."""

    deleted: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"deleted orphan marker {pk}" for pk in self.deleted]
        lines += [f"gave owner-less marker {pk} to the account holding its value" for pk in self.adopted]
        lines += [f"created missing marker {pk}" for pk in self.created]
        lines += [f"left alone: {c}" for c in self.conflicts]
        return "\n".join(lines) or "nothing to repair"


def _rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def repair(
    client: DynamoDBClient,
    table: str,
    report: AuditReport | None = None,
    *,
    fields: Fields = DEFAULT_FIELDS,
) -> RepairReport:
    """Fix what an audit found, each fix its own guarded transaction; conflicts are reported.

    An orphan marker is deleted only if it still has the owner the audit saw and that owner
    still does not hold the value; an owner-less marker (like the article's) whose value one
    account holds is given to that account instead. A missing marker is created
    (attribute_not_exists) only while the account still holds the value. A marker owned by
    another account and values with several owners are only reported (someone must decide).
    """
    fields = check_fields(fields)
    report = report if report is not None else audit(client, table, fields=fields)
    done = RepairReport()
    for row in _rows(report.orphan_markers):
        holders = list(row.get("holders") or [])
        if row.get("kind") == "ownerless_marker" and len(holders) == 1:
            _adopt(client, table, {**row, "account": holders[0]}, fields, done)
        else:
            _repair_orphan(client, table, row, fields, done)
    for row in _rows(report.missing_markers):
        if row.get("kind") == "marker_owned_by_other":
            pk = marker_key(str(row["namespace"]), str(row["value"]))["PK"]
            done.conflicts.append(
                f"{pk} belongs to another owner; not overwritten — change {row['account']}'s "
                f"{row['attribute']} or decide who keeps it"
            )
        else:
            _repair_missing(client, table, row, fields, done)
    for row in _rows(report.several_owners):
        done.conflicts.append(
            f"{row['attribute']} {row['value']!r} is held by {', '.join(row['records'])}; "
            "decide which account keeps it, then change the others"
        )
    return done


def _parts(spec: FieldSpec, value: str) -> dict[str, str]:
    """A composite marker's parts (attribute -> value); empty for a single field."""
    return {} if isinstance(spec, str) else dict(zip(spec, split_parts(value), strict=True))


def _fix(
    client: DynamoDBClient,
    actions: list[dict[str, Any]],
    slots: list[Slot],
    what: str,
    done: RepairReport,
    made: list[str],
    pk: str,
) -> None:
    """Send one guarded fix; a guard that no longer holds becomes a reported conflict."""
    try:
        transact(client, actions, slots, check_token(None), what)
    except (ConflictError, TransactionCancelled) as exc:
        done.conflicts.append(str(exc))
    else:
        made.append(pk)


def _adopt(
    client: DynamoDBClient, table: str, claimant: Mapping[str, Any], fields: Mapping[FieldSpec, str], done: RepairReport
) -> None:
    """Give an owner-less marker to the one account holding its value (no unprotected gap)."""
    pk, attribute, value = str(claimant["marker"]), str(claimant["attribute"]), str(claimant["value"])
    spec = spec_of(fields, attribute)
    account_id = str(claimant["account"])[len(C.ACCOUNT_PREFIX) :]
    cond = condition_params(Attr("owner").not_exists())
    record: dict[str, Any] = {"owner": account_id, "field": attribute, "value": value}
    if not isinstance(spec, str):
        record["parts"] = _parts(spec, value)
    actions: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": to_wire({"PK": pk, "SK": C.MARKER_SK}),
                "UpdateExpression": "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(record))),
                "ConditionExpression": cond["ConditionExpression"],
                "ExpressionAttributeNames": {
                    **cond["ExpressionAttributeNames"],
                    **{f"#a{i}": name for i, name in enumerate(record)},
                },
                "ExpressionAttributeValues": to_wire({f":a{i}": v for i, v in enumerate(record.values())}),
            }
        },
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": to_wire(account_key(account_id)),
                **condition_params(holds(spec, value)),
            }
        },
    ]
    slots = [Slot("check", f"marker {pk} without owner"), Slot("check", f"account {account_id} holding {value!r}")]
    _fix(client, actions, slots, f"adopting marker {pk}", done, done.adopted, pk)


def _repair_orphan(
    client: DynamoDBClient, table: str, row: Mapping[str, Any], fields: Mapping[FieldSpec, str], done: RepairReport
) -> None:
    pk, owner = str(row["marker"]), row.get("owner")
    key = {"PK": pk, "SK": C.MARKER_SK}
    has_owner = isinstance(owner, str) and owner != ""
    guard = Attr("owner").eq(owner) if has_owner else Attr("owner").not_exists()
    actions: list[dict[str, Any]] = [{"Delete": {"TableName": table, "Key": to_wire(key), **condition_params(guard)}}]
    slots = [Slot("check", f"marker {pk} with owner {owner!r}")]
    if has_owner:
        still_free = Attr("PK").not_exists() | ~holds(spec_of(fields, str(row["attribute"])), str(row["value"]))
        actions.append(
            {
                "ConditionCheck": {
                    "TableName": table,
                    "Key": to_wire(account_key(str(owner))),
                    **condition_params(still_free),
                }
            }
        )
        slots.append(Slot("check", f"account {owner} not holding {row['value']!r}"))
    _fix(client, actions, slots, f"deleting orphan marker {pk}", done, done.deleted, pk)


def _repair_missing(
    client: DynamoDBClient, table: str, row: Mapping[str, Any], fields: Mapping[FieldSpec, str], done: RepairReport
) -> None:
    account_pk, attribute, value = str(row["account"]), str(row["attribute"]), str(row["value"])
    account_id = account_pk[len(C.ACCOUNT_PREFIX) :]
    spec = spec_of(fields, attribute)
    item = marker_item(fields[spec], attribute, value, account_id, _parts(spec, value) or None)
    actions: list[dict[str, Any]] = [
        {"Put": {"TableName": table, "Item": to_wire(item), "ConditionExpression": "attribute_not_exists(PK)"}},
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": to_wire(account_key(account_id)),
                **condition_params(holds(spec, value)),
            }
        },
    ]
    slots = [
        Slot("claim", f"{attribute} marker", attribute, value),
        Slot("check", f"account {account_id} holding {value!r}"),
    ]
    try:
        transact(client, actions, slots, check_token(None), f"creating marker {item['PK']}")
    except ValueTaken:
        done.conflicts.append(
            f"{item['PK']} belongs to another owner; not overwritten — change {account_pk}'s "
            f"{attribute} or decide who keeps it"
        )
    except (ConflictError, TransactionCancelled) as exc:
        done.conflicts.append(str(exc))
    else:
        done.created.append(item["PK"])


__all__ = ["AuditReport", "RepairReport", "audit", "repair"]
