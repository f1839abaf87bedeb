"""Unique email and username: one marker item per value, written with the account in one transaction.

DynamoDB enforces one uniqueness rule, the primary key. So every unique value becomes a key: beside
the account ``ACCT#<id>`` / ``PROFILE``, a marker ``UNIQ#EMAIL#<email>`` / ``LOCK`` (and one per
username) records its ``owner``. Each Put is guarded by ``attribute_not_exists(PK)``, evaluated on
the one item with exactly that key, and the transaction applies all actions or none. A change and a
delete are transactions too, guarded by the owner and by the values the account holds.

Values are normalised before they become keys (trimmed, NFKC, case-folded: ``Ada@Lovelace.io``
and ``ada@lovelace.io`` are one email, ``ADA`` and ``ada`` one username), and look-alikes are
refused (:class:`LookAlike`: control and invisible characters, blank letters, a word mixing Latin
with Cyrillic or Greek letters) — labkit's policy. The request builders normalise the values they are
given, so a value as typed makes the same marker. Each builds the request; the caller sends it with
``transact_write_items`` and a
ClientRequestToken fixed before the first send, so a resend after a lost answer is the identical
request (``outbox.py`` keeps it across a restart). A cancelled transaction says which action failed:
``cancellation.py``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn"}  # control, format (zero-width, bidi), surrogate, private, unassigned
BLANK = {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"}  # letters that render as nothing
SCRIPTS = {"LATIN", "CYRILLIC", "GREEK"}  # they share look-alike letters: one of them per word


class LookAlike(ValueError):
    """A value that could pass for another (an invisible character, mixed scripts): nothing is built."""


def normalise(value: str) -> str:
    """One spelling per value: trimmed, NFKC, case-folded; look-alikes refused (a policy: lesson 02 §4)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", value.strip()).casefold()).strip()
    for text in (value.strip(), folded):
        for ch in text:
            if unicodedata.category(ch) in INVISIBLE or ch in BLANK:
                raise LookAlike(f"{value!r} contains U+{ord(ch):04X}, an invisible or control character")
        for word in re.findall(r"[^\W\d_]+", text):
            scripts = {unicodedata.name(ch, "").split(" ")[0] for ch in word} & SCRIPTS
            if len(scripts) > 1:
                raise LookAlike(f"{value!r} mixes {' and '.join(sorted(scripts))} letters in {word!r}")
    if not folded:
        raise ValueError(f"{value!r} is empty once trimmed: no value to make unique")
    return folded


def marker_put(table: str, namespace: str, field: str, value: str, owner: str) -> dict[str, Any]:
    """Claim a unique value: its marker item, written only if no item has that key."""
    marker = {"PK": {"S": f"UNIQ#{namespace}#{value}"}, "SK": {"S": "LOCK"}, "owner": {"S": owner}}
    item = marker | {"field": {"S": field}, "value": {"S": value}}
    return {"Put": {"TableName": table, "Item": item, "ConditionExpression": "attribute_not_exists(PK)"}}


def marker_delete(table: str, namespace: str, value: str, owner: str) -> dict[str, Any]:
    """Release a unique value: delete its marker only if this account owns it."""
    key = {"PK": {"S": f"UNIQ#{namespace}#{value}"}, "SK": {"S": "LOCK"}}
    owned = {"ExpressionAttributeNames": {"#owner": "owner"}, "ExpressionAttributeValues": {":owner": {"S": owner}}}
    return {"Delete": {"TableName": table, "Key": key, "ConditionExpression": "#owner = :owner", **owned}}


def register_request(table: str, account_id: str, email: str, username: str, token: str) -> dict[str, Any]:
    """Sign-up: the account and a marker per unique value, all or none (actions 0, 1, 2)."""
    email, username = normalise(email), normalise(username)  # as typed -> the one spelling; LookAlike
    account = {"PK": {"S": f"ACCT#{account_id}"}, "SK": {"S": "PROFILE"}, "id": {"S": account_id}}
    account |= {"email": {"S": email}, "username": {"S": username}}
    actions = [
        {"Put": {"TableName": table, "Item": account, "ConditionExpression": "attribute_not_exists(PK)"}},
        marker_put(table, "EMAIL", "email", email, account_id),
        marker_put(table, "HANDLE", "username", username, account_id),
    ]
    return {"TransactItems": actions, "ClientRequestToken": token}


def change_email_request(table: str, account: dict[str, Any], new_email: str, token: str) -> dict[str, Any] | None:
    """Claim the new email, release the old, update the account if it still holds the old one.

    ``new_email`` is normalised first. None when there is nothing to change: the new email is the
    old one. (Sent anyway, its Put and
    Delete would target one marker item, and DynamoDB refuses the whole transaction with a
    ValidationException: "Transaction request cannot include multiple operations on one item".)
    """
    owner, old, new_email = account["id"]["S"], account["email"]["S"], normalise(new_email)
    if new_email == old:
        return None
    update = {"TableName": table, "Key": {"PK": account["PK"], "SK": account["SK"]}}
    update |= {"UpdateExpression": "SET #email = :new_email", "ConditionExpression": "#email = :email"}
    update |= {"ExpressionAttributeNames": {"#email": "email"}}
    update |= {"ExpressionAttributeValues": {":email": {"S": old}, ":new_email": {"S": new_email}}}
    actions = [
        marker_put(table, "EMAIL", "email", new_email, owner),
        marker_delete(table, "EMAIL", old, owner),
        {"Update": update},
    ]
    return {"TransactItems": actions, "ClientRequestToken": token}


def delete_request(table: str, account: dict[str, Any], token: str) -> dict[str, Any]:
    """Delete the account if it still holds its values, and release each marker it owns."""
    owner, email, username = account["id"]["S"], account["email"]["S"], account["username"]["S"]
    delete = {"TableName": table, "Key": {"PK": account["PK"], "SK": account["SK"]}}
    delete |= {"ConditionExpression": "attribute_exists(PK) AND #email = :email AND #username = :username"}
    delete |= {"ExpressionAttributeNames": {"#email": "email", "#username": "username"}}
    delete |= {"ExpressionAttributeValues": {":email": {"S": email}, ":username": {"S": username}}}
    actions = [
        {"Delete": delete},
        marker_delete(table, "EMAIL", email, owner),
        marker_delete(table, "HANDLE", username, owner),
    ]
    return {"TransactItems": actions, "ClientRequestToken": token}


def read_account(client: Any, table: str, account_id: str) -> dict[str, Any] | None:
    """The account item as stored (strongly consistent): what change and delete are built from."""
    key = {"PK": {"S": f"ACCT#{account_id}"}, "SK": {"S": "PROFILE"}}
    item: dict[str, Any] | None = client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    return item
