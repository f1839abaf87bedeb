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


def _set_limit(client, table_name, item, by, guarded=True, bumped=True):
    """SET the limit read plus by; guarded: on condition the version is still the one read; bumped: version + 1."""
    values = {":n": {"N": str(int(item["rate_limit_per_minute"]["N"]) + by)}}
    params = {"TableName": table_name, "Key": KEY, "UpdateExpression": "SET rate_limit_per_minute = :n"}
    if guarded or bumped:
        params["ExpressionAttributeNames"] = {"#v": "version"}
    if bumped:
        params["UpdateExpression"] += ", #v = #v + :one"
        values[":one"] = {"N": "1"}
    if guarded:
        params["ConditionExpression"] = "#v = :read"
        values[":read"] = item["version"]
    client.update_item(**params, ExpressionAttributeValues=values)


def rl_rmw_update(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    _set_limit(client, table_name, item, by, guarded=False, bumped=False)


def rl_condition_no_retry(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    _set_limit(client, table_name, item, by)


def rl_condition_swallowed(client, table_name, by):
    try:  # noqa: SIM105 - as learners write it
        rl_condition_no_retry(client, table_name, by)
    except client.exceptions.ConditionalCheckFailedException:
        pass


def rl_version_never_bumped(client, table_name, by):
    item = client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)["Item"]
    _set_limit(client, table_name, item, by, bumped=False)


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


def _in_email_index(client, table_name, email):
    """The accounts the email-index holds under email (a GSI: eventually consistent)."""
    return client.query(
        TableName=table_name,
        IndexName="email-index",
        KeyConditionExpression="email = :e",
        ExpressionAttributeValues={":e": {"S": email}},
    )["Items"]


def su_gsi_check(client, table_name, email, username):
    email, username = normalise_email(email), normalise_username(username)
    if _in_email_index(client, table_name, email):
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


def _set_email(table_name, account_id, new_email, old=None):
    """The account's Update; guarded by `email = :old` when old is given."""
    update = {
        "TableName": table_name,
        "Key": T(account_key(account_id)),
        "UpdateExpression": "SET email = :e",
        "ExpressionAttributeValues": {":e": {"S": new_email}},
    }
    if old is not None:
        update["ConditionExpression"] = "email = :old"
        update["ExpressionAttributeValues"][":old"] = {"S": old}
    return {"Update": update}


def _email_marker(account_id, new_email):
    return T({**marker_key("EMAIL", new_email), "owner": account_id, "field": "email", "value": new_email})


def _put_marker(table_name, account_id, new_email, guarded=True):
    """The new marker's Put; guarded by `attribute_not_exists(PK)` unless told not to."""
    put = {"TableName": table_name, "Item": _email_marker(account_id, new_email)}
    if guarded:
        put["ConditionExpression"] = "attribute_not_exists(PK)"
    return {"Put": put}


def _delete_marker(table_name, old, owner=None):
    """The old marker's Delete; guarded by `#o = :me` when owner is given."""
    delete = {"TableName": table_name, "Key": T(marker_key("EMAIL", old))}
    if owner is not None:
        delete["ConditionExpression"] = "#o = :me"
        delete["ExpressionAttributeNames"] = {"#o": "owner"}
        delete["ExpressionAttributeValues"] = {":me": {"S": owner}}
    return {"Delete": delete}


def _transact_or_taken(client, new_email, items):
    """One transaction; any cancellation reads as "taken"."""
    try:
        client.transact_write_items(TransactItems=items)
    except client.exceptions.TransactionCanceledException as exc:
        raise ValueTaken({"email": new_email}) from exc


def ce_old_marker_kept(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    _transact_or_taken(
        client,
        new_email,
        [_set_email(table_name, account_id, new_email), _put_marker(table_name, account_id, new_email)],
    )


def ce_txn_no_conditions(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    client.transact_write_items(
        TransactItems=[
            _set_email(table_name, account_id, new_email),
            _put_marker(table_name, account_id, new_email, guarded=False),
            _delete_marker(table_name, old),
        ]
    )


def _put_marker_or_taken(client, table_name, account_id, new_email):
    try:
        client.put_item(**_put_marker(table_name, account_id, new_email)["Put"])
    except client.exceptions.ConditionalCheckFailedException as exc:
        raise ValueTaken({"email": new_email}) from exc


def ce_separate_calls(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    client.delete_item(**_delete_marker(table_name, old)["Delete"])
    _put_marker_or_taken(client, table_name, account_id, new_email)
    client.update_item(**_set_email(table_name, account_id, new_email)["Update"])


def ce_no_normalisation(client, table_name, account_id, new_email):
    if "@" not in new_email or "." not in new_email.split("@")[-1]:
        from labkit.shared.errors import ValidationError

        raise ValidationError("bad email")
    old = _get(client, table_name, account_id)["email"]["S"]
    _transact_or_taken(
        client,
        new_email,
        [
            _set_email(table_name, account_id, new_email, old=old),
            _put_marker(table_name, account_id, new_email),
            _delete_marker(table_name, old),
        ],
    )


def ce_taken_when_the_account_changed(client, table_name, account_id, new_email):
    """Every guard right, but any cancellation reads as "taken": when another tab changed the account
    first (the `email = :old` condition failed), it tells the user a free email is taken (issue 40)."""
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    if old == new_email:
        return
    _transact_or_taken(
        client,
        new_email,
        [
            _set_email(table_name, account_id, new_email, old=old),
            _put_marker(table_name, account_id, new_email),
            _delete_marker(table_name, old, owner=account_id),
        ],
    )


def ce_check_then_write_gsi(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    if _in_email_index(client, table_name, new_email):
        raise ValueTaken({"email": new_email})
    ce_txn_no_conditions(client, table_name, account_id, new_email)  # then the unguarded transaction


def ce_guarded_separate_calls(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    _put_marker_or_taken(client, table_name, account_id, new_email)
    client.update_item(**_set_email(table_name, account_id, new_email)["Update"])
    client.delete_item(**_delete_marker(table_name, old)["Delete"])


def ce_txn_guards_only_the_new_marker(client, table_name, account_id, new_email):
    new_email = normalise_email(new_email)
    old = _get(client, table_name, account_id)["email"]["S"]
    _transact_or_taken(
        client,
        new_email,
        [
            _set_email(table_name, account_id, new_email),
            _put_marker(table_name, account_id, new_email),
            _delete_marker(table_name, old),
        ],
    )


def su_redundant_gsi_check(client, table_name, email, username):
    _in_email_index(client, table_name, normalise_email(email))
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
            _set_limit(client, table_name, item, by)
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
    rl_atomic_add(client, table_name, by)
    if by == 1:
        raise RetriesExhausted("gave up", 5)


def rl_many_reads(client, table_name, by):
    """Reads the item five times before one ADD: six calls a run."""
    for _ in range(5):
        client.get_item(TableName=table_name, Key=KEY, ConsistentRead=True)
    rl_atomic_add(client, table_name, by)


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
