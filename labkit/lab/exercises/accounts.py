"""What the two uniqueness exercises share: keys, seeds, invariants, and the diagnosis of mistakes."""

from __future__ import annotations

from typing import Any

from ...patterns.uniqueness import DEFAULT_FIELDS, account_key, marker_item, marker_key
from ...shared.catalogue import Op
from ...shared.table import table_spec
from ..invariants import check_uniqueness
from .outcomes import Broke, Outcome, RecordedCall

# Keys as labkit.patterns.uniqueness builds them (derived, so they cannot drift from the lesson's).
EMAIL_NAMESPACE = DEFAULT_FIELDS["email"]
HANDLE_NAMESPACE = DEFAULT_FIELDS["username"]
ACCOUNT_PREFIX, ACCOUNT_SK = account_key("")["PK"], account_key("")["SK"]
EMAIL_MARKER_PREFIX = marker_key(EMAIL_NAMESPACE, "")["PK"]
HANDLE_MARKER_PREFIX = marker_key(HANDLE_NAMESPACE, "")["PK"]
MARKER_PREFIXES = (EMAIL_MARKER_PREFIX, HANDLE_MARKER_PREFIX)
MARKER_SK = marker_key(EMAIL_NAMESPACE, "")["SK"]
EMAIL_INDEX_NAME = table_spec("labkit-x")["GlobalSecondaryIndexes"][0]["IndexName"]

KEYS = (
    f"accounts {ACCOUNT_PREFIX}<id>/{ACCOUNT_SK} and markers {EMAIL_MARKER_PREFIX}<email>/{MARKER_SK}, "
    f"{HANDLE_MARKER_PREFIX}<username>/{MARKER_SK}"
)


def allowed(pk: str, sk: str) -> bool:
    if pk.startswith(ACCOUNT_PREFIX):
        return sk == ACCOUNT_SK
    return pk.startswith(MARKER_PREFIXES) and sk == MARKER_SK


def account(account_id: str, email: str, username: str) -> list[dict[str, Any]]:
    """An account and its two markers, as plain items."""
    return [
        {**account_key(account_id), "id": account_id, "email": email, "username": username},
        marker_item(EMAIL_NAMESPACE, "email", email, account_id),
        marker_item(HANDLE_NAMESPACE, "username", username, account_id),
    ]


def accounts(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if i["PK"].startswith(ACCOUNT_PREFIX) and i["SK"] == ACCOUNT_SK]


def broken(items: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The first broken uniqueness invariant as (kind, words), or None."""
    found = check_uniqueness(items)
    if found.empty:
        return None
    row = found.iloc[0]
    kind = str(row["kind"])
    if kind == "several_owners":
        return kind, f"two accounts hold {row['attribute']} {row['value']!r}: {', '.join(row['records'])}"
    if kind == "orphan_marker":
        return kind, f"the marker {row['records'][0]} is an orphan ({row['detail']})"
    return kind, f"the account {row['records'][0]} has no marker for its {row['attribute']} ({row['detail']})"


def shape(calls: list[RecordedCall]) -> dict[str, bool]:
    """Features of a solution, from the calls it made."""
    writes = [c for c in calls if c.is_write]
    gsi = any(c.operation == Op.QUERY and c.params.get("IndexName") == EMAIL_INDEX_NAME for c in calls)
    scan = any(c.operation == Op.SCAN for c in calls)
    txn = [c for c in writes if c.operation == Op.TRANSACT_WRITE_ITEMS]
    unguarded_txn = any(
        body.get("ConditionExpression") is None
        for c in txn
        for action, body in c.actions()
        if action == "Put" and str((body.get("Item") or {}).get("PK", {}).get("S", "")).startswith(MARKER_PREFIXES)
    )
    marker_puts = [
        c
        for c in writes
        if any(
            str((body.get("Item") or body.get("Key") or {}).get("PK", {}).get("S", "")).startswith(MARKER_PREFIXES)
            for _, body in c.actions()
        )
    ]
    return {
        "gsi": gsi,
        "scan": scan,
        "txn": bool(txn),
        "unguarded_txn": unguarded_txn,
        "separate": any(sum(c.is_write for c in calls if c.actor == a) > 1 for a in {c.actor for c in calls}),
        "markers": bool(marker_puts),
        "unguarded": any(not c.conditional for c in writes),
    }


def _check_then_write(through: str, did: str, aside: str = "") -> str:
    """The sentence for a check-then-write: two callers read, found nothing, and both wrote."""
    return (
        f"check-then-write through {through}: both {did}, both found nothing, both wrote. "
        f"A read reserves nothing{aside}; only a conditional write of a marker item can refuse the second one"
    )


def mistake(calls: list[RecordedCall], invariant: str) -> tuple[str, str]:
    """(kind, sentence) naming the classic mistake that explains a broken invariant."""
    s = shape(calls)
    if invariant == "several_owners" or invariant == "duplicate":
        if s["gsi"] and (s["unguarded"] or not s["markers"]):
            return "check-then-write-gsi", _check_then_write(
                "the GSI", "queried email-index", " (and a GSI is eventually consistent)"
            )
        if s["scan"] and (s["unguarded"] or not s["markers"]):
            return "check-then-write-scan", _check_then_write("a Scan", "scanned")
        if s["unguarded_txn"]:
            return (
                "transaction-without-conditions",
                "a transaction without conditions: your TransactWriteItems Puts the marker with no "
                "ConditionExpression, so the second Put silently overwrites the first. Add "
                "ConditionExpression='attribute_not_exists(PK)' to every marker Put",
            )
        if s["unguarded"]:
            return (
                "check-then-write",
                "check-then-write: the check is a read and the write has no condition, so a "
                "write landing between them goes unnoticed. Make the marker Put conditional",
            )
    if invariant in ("orphan_marker", "missing_marker") and s["txn"] and s["unguarded"] and not s["separate"]:
        return (
            "transaction-without-conditions",
            "a transaction without conditions: it is all-or-nothing, but it still applies on top of a "
            "change made since your read. Guard each action with what you read — the account Update "
            "with ConditionExpression='email = :old', the old marker's Delete with its owner — and "
            "read again and retry when it is cancelled",
        )
    if invariant in ("orphan_marker", "missing_marker") and s["separate"]:
        return (
            "separate-calls",
            "markers written in separate calls: when one write succeeds and the next fails "
            "(the other value is taken, or the process dies), the first stays behind. Write the "
            "account and all its markers in ONE TransactWriteItems, so all or none are applied",
        )
    return ("wrong-result", "the table is left in a state the pattern forbids")


def calls_of(outs: dict[str, Outcome]) -> list[RecordedCall]:
    return [c for o in outs.values() for c in o.calls]


def diagnose(broke: Broke) -> tuple[str, str, str]:
    """(invariant, kind, words) for an order that broke uniqueness: the invariant the table shows
    broken ("duplicate" when it shows none) and the classic mistake that explains it."""
    lost = broken(broke.items)
    invariant = lost[0] if lost else "duplicate"
    kind, words = mistake(calls_of(broke.outcomes), invariant)
    return invariant, kind, words


def taken_not_refused(what: str, out: Outcome) -> tuple[str, str]:
    """(kind, sentence) for a call on a taken value that raised an error other than ValueTaken."""
    return (
        "taken-not-refused",
        f"{what} raised {type(out.exc).__name__}, not ValueTaken: a taken value raises "
        "labkit.shared.errors.ValueTaken({'email': ...}) (the field and its normalised value) and writes nothing",
    )


def storm_mistake(calls: list[RecordedCall], problem: str) -> tuple[str, str]:
    """(kind, sentence) for a storm that broke uniqueness: an orphan marker, or several owners."""
    return mistake(calls, "orphan_marker" if "orphan" in problem else "several_owners")
