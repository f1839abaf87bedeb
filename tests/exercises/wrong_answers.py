"""The classic wrong answers to the workshop exercises, written the way learners write them.

Plain boto3 calls; each is one of the mistakes the checker (labkit.lab.exercises) must name.
:data:`CATALOGUE` lists them with the exercise, the mistake's kind and words the verdict must use.
"""

# mypy: disable-error-code="no-untyped-def,no-untyped-call"
# ruff: noqa: ANN001, ANN201, ARG001, E501

from __future__ import annotations

import time
import uuid

from labkit.lab.exercises.solutions import REFERENCE
from labkit.patterns.uniqueness import account_key, marker_key, normalise_email, normalise_username
from labkit.shared.errors import RetriesExhausted, TransactionConflict, ValueTaken

KEY = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}


def T(item):
    return {k: {"S": v} for k, v in item.items()}


# ---- raise-limit
def rl_read_modify_write(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    item["rate_limit_per_minute"] = {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)}
    client.put_item(TableName=table_name, Item=item)


def rl_rmw_update(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="SET rate_limit_per_minute = :n",
        ExpressionAttributeValues={":n": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)}},
    )


def rl_condition_no_retry(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="SET rate_limit_per_minute = :n, #v = #v + :one",
        ConditionExpression="#v = :read",
        ExpressionAttributeNames={"#v": "version"},
        ExpressionAttributeValues={
            ":n": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)},
            ":one": {"N": "1"},
            ":read": item["version"],
        },
    )


def rl_condition_swallowed(client, table_name, by):
    try:  # noqa: SIM105 - as learners write it
        rl_condition_no_retry(client, table_name, by)
    except client.exceptions.ConditionalCheckFailedException:
        pass


def rl_version_never_bumped(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="SET rate_limit_per_minute = :n",
        ConditionExpression="#v = :read",
        ExpressionAttributeNames={"#v": "version"},
        ExpressionAttributeValues={
            ":n": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)},
            ":read": item["version"],
        },
    )


def rl_atomic_add(client, table_name, by):
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="ADD rate_limit_per_minute :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )


# ---- unique-sign-up
def _account(email, username):
    i = uuid.uuid4().hex
    return i, {**account_key(i), "id": i, "email": email, "username": username}


def su_gsi_check(client, table_name, email, username):
    email, username = normalise_email(email), normalise_username(username)
    found = client.query(
        TableName=table_name,
        IndexName="email-index",
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": email}},
    )["Items"]
    if found:
        raise ValueTaken({"email": email})
    i, acct = _account(email, username)
    client.put_item(TableName=table_name, Item=T(acct))
    return i


def su_scan_check(client, table_name, email, username):
    email, username = normalise_email(email), normalise_username(username)
    found = client.scan(
        TableName=table_name,
        FilterExpression="email = :e OR username = :u",
        ExpressionAttributeValues={":e": {"S": email}, ":u": {"S": username}},
    )["Items"]
    if found:
        raise ValueTaken({"email": email})
    i, acct = _account(email, username)
    client.put_item(TableName=table_name, Item=T(acct))
    return i


def _markers(i, email, username):
    return [
        {**marker_key("EMAIL", email), "owner": i, "field": "email", "value": email},
        {**marker_key("HANDLE", username), "owner": i, "field": "username", "value": username},
    ]


def su_txn_no_conditions(client, table_name, email, username):
    email, username = normalise_email(email), normalise_username(username)
    i, acct = _account(email, username)
    client.transact_write_items(
        TransactItems=[{"Put": {"TableName": table_name, "Item": T(x)}} for x in [acct, *_markers(i, email, username)]]
    )
    return i


def su_separate_calls(client, table_name, email, username):
    email, username = normalise_email(email), normalise_username(username)
    i, acct = _account(email, username)
    try:
        for x in [*_markers(i, email, username), acct]:
            client.put_item(TableName=table_name, Item=T(x), ConditionExpression="attribute_not_exists(PK)")
    except client.exceptions.ConditionalCheckFailedException as exc:
        raise ValueTaken({"email": email}) from exc
    return i


def su_no_normalisation(client, table_name, email, username):
    i, acct = _account(email, username)
    try:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table_name, "Item": T(x), "ConditionExpression": "attribute_not_exists(PK)"}}
                for x in [acct, *_markers(i, email, username)]
            ]
        )
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": email}) from exc
    return i


# ---- change-email
def _get(client, table_name, account_id):
    return client.get_item(TableName=table_name, Key=T(account_key(account_id)), ConsistentRead=True)["Item"]


def ce_old_marker_kept(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table_name,
                        "Key": T(account_key(account_id)),
                        "UpdateExpression": "SET email = :e",
                        "ExpressionAttributeValues": {":e": {"S": new_email}},
                    }
                },
                {
                    "Put": {
                        "TableName": table_name,
                        "Item": T(
                            {
                                **marker_key("EMAIL", new_email),
                                "owner": account_id,
                                "field": "email",
                                "value": new_email,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
            ]
        )
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": new_email}) from exc


def ce_txn_no_conditions(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    client.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": table_name,
                    "Key": T(account_key(account_id)),
                    "UpdateExpression": "SET email = :e",
                    "ExpressionAttributeValues": {":e": {"S": new_email}},
                }
            },
            {
                "Put": {
                    "TableName": table_name,
                    "Item": T(
                        {**marker_key("EMAIL", new_email), "owner": account_id, "field": "email", "value": new_email}
                    ),
                }
            },
            {"Delete": {"TableName": table_name, "Key": T(marker_key("EMAIL", old))}},
        ]
    )


def ce_separate_calls(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    client.delete_item(TableName=table_name, Key=T(marker_key("EMAIL", old)))
    try:
        client.put_item(
            TableName=table_name,
            Item=T({**marker_key("EMAIL", new_email), "owner": account_id, "field": "email", "value": new_email}),
            ConditionExpression="attribute_not_exists(PK)",
        )
    except client.exceptions.ConditionalCheckFailedException as exc:
        raise ValueTaken({"email": new_email}) from exc
    client.update_item(
        TableName=table_name,
        Key=T(account_key(account_id)),
        UpdateExpression="SET email = :e",
        ExpressionAttributeValues={":e": {"S": new_email}},
    )


def ce_no_normalisation(client, table_name, account_id, new_email):
    if "@" not in new_email or "." not in new_email.split("@")[-1]:
        from labkit.shared.errors import ValidationError

        raise ValidationError("bad email")
    old = _get(client, table_name, account_id)["email"]["S"]
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table_name,
                        "Key": T(account_key(account_id)),
                        "UpdateExpression": "SET email = :e",
                        "ConditionExpression": "email = :old",
                        "ExpressionAttributeValues": {":e": {"S": new_email}, ":old": {"S": old}},
                    }
                },
                {
                    "Put": {
                        "TableName": table_name,
                        "Item": T(
                            {
                                **marker_key("EMAIL", new_email),
                                "owner": account_id,
                                "field": "email",
                                "value": new_email,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {"Delete": {"TableName": table_name, "Key": T(marker_key("EMAIL", old))}},
            ]
        )
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": new_email}) from exc


def ce_taken_when_the_account_changed(client, table_name, account_id, new_email):
    """Every guard right, but any cancellation reads as "taken": when another tab changed the account
    first (the `email = :old` condition failed), it tells the user a free email is taken (issue 40)."""
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    if old == new_email:
        return
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table_name,
                        "Key": T(account_key(account_id)),
                        "UpdateExpression": "SET email = :e",
                        "ConditionExpression": "email = :old",
                        "ExpressionAttributeValues": {":e": {"S": new_email}, ":old": {"S": old}},
                    }
                },
                {
                    "Put": {
                        "TableName": table_name,
                        "Item": T(
                            {
                                **marker_key("EMAIL", new_email),
                                "owner": account_id,
                                "field": "email",
                                "value": new_email,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(PK)",
                    }
                },
                {
                    "Delete": {
                        "TableName": table_name,
                        "Key": T(marker_key("EMAIL", old)),
                        "ConditionExpression": "#o = :me",
                        "ExpressionAttributeNames": {"#o": "owner"},
                        "ExpressionAttributeValues": {":me": {"S": account_id}},
                    }
                },
            ]
        )
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": new_email}) from exc


def ce_check_then_write_gsi(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    if client.query(
        TableName=table_name,
        IndexName="email-index",
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": new_email}},
    )["Items"]:
        raise ValueTaken({"email": new_email})
    old = _get(client, table_name, account_id)["email"]["S"]
    client.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": table_name,
                    "Key": T(account_key(account_id)),
                    "UpdateExpression": "SET email = :e",
                    "ExpressionAttributeValues": {":e": {"S": new_email}},
                }
            },
            {
                "Put": {
                    "TableName": table_name,
                    "Item": T(
                        {**marker_key("EMAIL", new_email), "owner": account_id, "field": "email", "value": new_email}
                    ),
                }
            },
            {"Delete": {"TableName": table_name, "Key": T(marker_key("EMAIL", old))}},
        ]
    )


def ce_guarded_separate_calls(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    try:
        client.put_item(
            TableName=table_name,
            Item=T({**marker_key("EMAIL", new_email), "owner": account_id, "field": "email", "value": new_email}),
            ConditionExpression="attribute_not_exists(PK)",
        )
    except client.exceptions.ConditionalCheckFailedException as exc:
        raise ValueTaken({"email": new_email}) from exc
    client.update_item(
        TableName=table_name,
        Key=T(account_key(account_id)),
        UpdateExpression="SET email = :e",
        ExpressionAttributeValues={":e": {"S": new_email}},
    )
    client.delete_item(TableName=table_name, Key=T(marker_key("EMAIL", old)))


def ce_txn_guards_only_the_new_marker(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    try:
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table_name,
                        "Key": T(account_key(account_id)),
                        "UpdateExpression": "SET email = :e",
                        "ExpressionAttributeValues": {":e": {"S": new_email}},
                    }
                },
                {
                    "Put": {
                        "TableName": table_name,
                        "ConditionExpression": "attribute_not_exists(PK)",
                        "Item": T(
                            {
                                **marker_key("EMAIL", new_email),
                                "owner": account_id,
                                "field": "email",
                                "value": new_email,
                            }
                        ),
                    }
                },
                {"Delete": {"TableName": table_name, "Key": T(marker_key("EMAIL", old))}},
            ]
        )
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": new_email}) from exc


def su_redundant_gsi_check(client, table_name, email, username):
    client.query(
        TableName=table_name,
        IndexName="email-index",
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": normalise_email(email)}},
    )
    return REFERENCE["unique-sign-up"](client, table_name, email, username)


# ---- bad solutions
def wrong_signature(client, by):
    pass


def hangs(client, table_name, by):
    while True:
        time.sleep(0.02)


def deletes_table(client, table_name, by):
    client.delete_table(TableName=table_name)


def writes_outside(client, table_name, by):
    client.put_item(TableName=table_name, Item={"PK": {"S": "HACK"}, "SK": {"S": "X"}})


def stub(client, table_name, by):
    raise NotImplementedError


def crashes(client, table_name, by):
    return 1 / 0


def retries_without_reading(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    while True:  # never re-reads: once it loses, it loses for ever
        try:
            client.update_item(
                TableName=table_name,
                Key=KEY,
                UpdateExpression="SET rate_limit_per_minute = :n, #v = #v + :one",
                ConditionExpression="#v = :read",
                ExpressionAttributeNames={"#v": "version"},
                ExpressionAttributeValues={
                    ":n": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)},
                    ":one": {"N": "1"},
                    ":read": item["version"],
                },
            )
            return
        except client.exceptions.ConditionalCheckFailedException:
            continue


def other_table(client, table_name, email, username):
    client.put_item(TableName="labkit-lab", Item={"PK": {"S": "ACCT#x"}, "SK": {"S": "PROFILE"}})
    return "x"


def own_client(client, table_name, by):
    import labkit

    labkit.connect().client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="ADD rate_limit_per_minute :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )


def stub_change_email(client, table_name, account_id, new_email):
    raise NotImplementedError


def always_taken(client, table_name, email, username):
    raise ValueTaken({"email": email})


# ---- outcomes the task names beyond the classic mistakes (issue 40: a test per outcome name)
def rl_add_then_give_up(client, table_name, by):
    """Adds, then raises RetriesExhausted in the storm (by=1) as if nothing had been written."""
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="ADD rate_limit_per_minute :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )
    if by == 1:
        raise RetriesExhausted("gave up", 5)


def rl_many_reads(client, table_name, by):
    """Reads the item five times before one ADD: six calls a run."""
    for _ in range(5):
        client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)
    client.update_item(
        TableName=table_name,
        Key=KEY,
        UpdateExpression="ADD rate_limit_per_minute :by",
        ExpressionAttributeValues={":by": {"N": str(by)}},
    )


def su_taken_as_conflict(client, table_name, email, username):
    """Reports a taken value as a TransactionConflict."""
    try:
        return REFERENCE["unique-sign-up"](client, table_name, email, username)
    except ValueTaken as exc:
        raise TransactionConflict("conflict", exc.reasons) from exc


def su_storm_emails_taken(client, table_name, email, username):
    """Calls every storm email (user<n>@example.com) taken, as a conflict misread as a taken value would."""
    if email.startswith("user"):
        raise ValueTaken({"email": normalise_email(email)})
    return REFERENCE["unique-sign-up"](client, table_name, email, username)


def ce_taken_as_retries_exhausted(client, table_name, account_id, new_email):
    """Reports a taken email as RetriesExhausted."""
    try:
        return REFERENCE["change-email"](client, table_name, account_id, new_email)
    except ValueTaken as exc:
        raise RetriesExhausted("gave up", 5) from exc


def ce_same_email_rewritten(client, table_name, account_id, new_email):
    """Writes the account back when the new email is the one it holds."""
    account = _get(client, table_name, account_id)
    if account["email"]["S"] == normalise_email(new_email):
        client.put_item(TableName=table_name, Item=account)
        return
    REFERENCE["change-email"](client, table_name, account_id, new_email)


def ce_unknown_account_crashes(client, table_name, account_id, new_email):
    """Reads the account as if it always existed: KeyError for an unknown id."""
    client.get_item(TableName=table_name, Key=T(account_key(account_id)), ConsistentRead=True)["Item"]
    REFERENCE["change-email"](client, table_name, account_id, new_email)


# ---------------------------------------------------------------- the catalogue

CATALOGUE = [
    ("raise-limit", rl_read_modify_write, "read-modify-write", "your PutItem wrote back the whole item as it was read"),
    ("raise-limit", rl_rmw_update, "read-modify-write", "your UpdateItem SET the limit computed from what was read"),
    (
        "raise-limit",
        rl_condition_no_retry,
        "condition-without-retry",
        "your function raised it: a condition with no retry",
    ),
    (
        "raise-limit",
        rl_condition_swallowed,
        "condition-without-retry",
        "returned as if it had worked: a condition with no retry",
    ),
    ("unique-sign-up", su_gsi_check, "check-then-write-gsi", "check-then-write through the GSI"),
    ("unique-sign-up", su_scan_check, "check-then-write-scan", "check-then-write through a Scan"),
    ("unique-sign-up", su_txn_no_conditions, "transaction-without-conditions", "a transaction without conditions"),
    ("unique-sign-up", su_separate_calls, "separate-calls", "markers written in separate calls"),
    ("unique-sign-up", su_no_normalisation, "missing-normalisation", "a missing normalisation"),
    ("change-email", ce_old_marker_kept, "old-marker-kept", "an old marker never deleted"),
    ("change-email", ce_txn_no_conditions, "transaction-without-conditions", "a transaction without conditions"),
    ("change-email", ce_separate_calls, "separate-calls", "markers written in separate calls"),
    ("change-email", ce_no_normalisation, "missing-normalisation", "a missing normalisation"),
    ("change-email", ce_check_then_write_gsi, "check-then-write-gsi", "check-then-write through the GSI"),
    (
        "change-email",
        ce_taken_when_the_account_changed,
        "condition-without-retry",
        "when the account changed since your read (the `email = :old` condition failed, slot 0), read it again",
    ),
    (
        "change-email",
        ce_txn_guards_only_the_new_marker,
        "transaction-without-conditions",
        "still applies on top of a change made since your read",
    ),
    ("raise-limit", rl_add_then_give_up, "wrote-then-gave-up", "yet one that gave up had added its 1"),
    (
        "raise-limit",
        rl_many_reads,
        "too-many-calls",
        "your function makes 6 DynamoDB calls per run, which gives 924 orders",
    ),
    ("unique-sign-up", su_taken_as_conflict, "taken-not-refused", "raised TransactionConflict, not ValueTaken"),
    ("unique-sign-up", su_storm_emails_taken, "conflict-as-taken", "a value nobody holds is not taken"),
    ("change-email", ce_taken_as_retries_exhausted, "taken-not-refused", "raised RetriesExhausted, not ValueTaken"),
    ("change-email", ce_same_email_rewritten, "same-email", "sent PutItem; the new email normalises to the one"),
    (
        "change-email",
        ce_unknown_account_crashes,
        "unknown-account",
        "raises labkit.shared.errors.NotFound and writes nothing",
    ),
]
