"""Orphan markers: find them with a Scan, and repair only what a strongly consistent re-read confirms.

A marker ``UNIQ#EMAIL#<email>`` / ``LOCK`` (``uniqueness.py``) is an *orphan* when its owner's
account ``ACCT#<owner>`` / ``PROFILE`` is gone or no longer holds its value: nobody can claim that
value again. A Scan is no proof of that. DynamoDB's isolation table (Developer Guide, *Isolation
levels for DynamoDB transactions*) lists Scan as *read-committed* against transactions: a Scan
beside a sign-up may return its new markers and not yet its new account, so a live user's marker
looks like an orphan. ``naive_repair`` trusts the Scan; ``checked_repair`` re-reads each finding
and its owner's account in one TransactGetItems (serializable) before any Delete, and each Delete
is guarded by the owner the audit saw.
"""

from typing import Any


def orphaned(marker: dict[str, Any], account: dict[str, Any] | None) -> bool:
    """The marker's value is not held by its owner's account (gone, or holding another value)."""
    return account is None or account.get(marker["field"]["S"]) != marker["value"]


def scan_findings(client: Any, table: str) -> list[dict[str, Any]]:
    """The markers a Scan (every page) shows whose owner's account it shows gone or holding another value."""
    items: list[dict[str, Any]] = []
    page: dict[str, Any] = {"TableName": table}
    while True:
        out = client.scan(**page)
        items += out["Items"]
        if "LastEvaluatedKey" not in out:
            break
        page["ExclusiveStartKey"] = out["LastEvaluatedKey"]
    accounts = {i["PK"]["S"]: i for i in items if i["SK"]["S"] == "PROFILE"}
    markers = [i for i in items if i["SK"]["S"] == "LOCK" and i["PK"]["S"].startswith("UNIQ#")]
    return [m for m in markers if orphaned(m, accounts.get(f"ACCT#{m['owner']['S']}"))]


def delete_marker(client: Any, table: str, marker: dict[str, Any]) -> None:
    """Delete the marker only if it still has the owner the audit saw."""
    client.delete_item(
        TableName=table,
        Key={"PK": marker["PK"], "SK": marker["SK"]},
        ConditionExpression="#owner = :owner",
        ExpressionAttributeNames={"#owner": "owner"},
        ExpressionAttributeValues={":owner": marker["owner"]},
    )


def naive_repair(client: Any, table: str) -> int:
    """Broken: deletes every marker the Scan showed as an orphan, trusting a Scan that may be torn."""
    found = scan_findings(client, table)
    for marker in found:
        delete_marker(client, table, marker)
    return len(found)


def still_orphaned(client: Any, table: str, marker: dict[str, Any]) -> bool:
    """Re-read the marker and its owner's account in one TransactGetItems (serializable): still an orphan?"""
    account = {"PK": {"S": f"ACCT#{marker['owner']['S']}"}, "SK": {"S": "PROFILE"}}
    keys = [{"PK": marker["PK"], "SK": marker["SK"]}, account]
    out = client.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": k}} for k in keys])
    now, owner = (r.get("Item") for r in out["Responses"])
    return now is not None and now["owner"] == marker["owner"] and orphaned(now, owner)


def checked_repair(client: Any, table: str) -> int:
    """Deletes only the findings a strongly consistent re-read confirms; returns how many it deleted."""
    confirmed = [m for m in scan_findings(client, table) if still_orphaned(client, table, m)]
    for marker in confirmed:
        delete_marker(client, table, marker)
    return len(confirmed)
