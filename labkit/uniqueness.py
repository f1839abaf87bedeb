"""Uniqueness across several attributes: one marker item per unique value, in one transaction.

DynamoDB enforces uniqueness on the primary key only. So every unique value becomes the
key of its own marker item, written in the same TransactWriteItems as the record, each Put
guarded by ``attribute_not_exists(PK)``: a taken value is a key collision the engine
refuses, and the whole sign-up is cancelled — no half account, no stray marker.

Items (one table, string ``PK`` + ``SK``)::

    PK                            SK       attributes
    ACCT#<id>                     PROFILE  id, email, username, ...
    UNIQ#EMAIL#ada@lovelace.io    LOCK     owner=<id>, field="email", value="ada@lovelace.io"
    UNIQ#HANDLE#ada               LOCK     owner=<id>, field="username", value="ada"

Every public operation takes a botocore DynamoDB client and a table name, so the race lab
can hand each actor its own client. :func:`register_check_then_write` is the anti-pattern
the lesson breaks on purpose; never use it for real.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import pandas as pd
from boto3.dynamodb.conditions import Attr, ConditionBase, ConditionExpressionBuilder
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError, ConnectionClosedError

from . import constants as C
from . import invariants
from .errors import (
    ConflictError,
    DynamoError,
    IdempotencyMismatch,
    LabkitError,
    NotFound,
    TransactionCancelled,
    TransactionConflict,
    ValidationError,
    ValueTaken,
    cancellation_reasons,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef
else:
    DynamoDBClient = Any

#: Which account attributes are unique, and the marker namespace each one uses.
DEFAULT_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {"email": C.EMAIL_NAMESPACE, "username": C.HANDLE_NAMESPACE}
)
#: Attribute names a unique field or an extra attribute may not take.
RESERVED_ATTRIBUTES: Final = frozenset({"PK", "SK", "id"})

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


# --- keys and items ---


def account_key(account_id: str) -> dict[str, str]:
    """The primary key of an account item."""
    return {"PK": f"{C.ACCOUNT_PREFIX}{account_id}", "SK": C.ACCOUNT_SK}


def marker_key(namespace: str, value: str) -> dict[str, str]:
    """The primary key of the marker that reserves ``value`` in ``namespace``."""
    return {"PK": f"{C.MARKER_PREFIX}{namespace}#{value}", "SK": C.MARKER_SK}


def marker_item(namespace: str, field_name: str, value: str, owner: str) -> dict[str, str]:
    """A marker item: its key is the value; ``owner`` is the account that holds it."""
    return {**marker_key(namespace, value), "owner": owner, "field": field_name, "value": value}


def _typed(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in item.items()}


def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deserializer.deserialize(v) for k, v in item.items()}


def _condition(cond: ConditionBase) -> dict[str, Any]:
    """ConditionExpression + typed placeholders for one transaction action."""
    built = ConditionExpressionBuilder().build_expression(cond)
    out: dict[str, Any] = {
        "ConditionExpression": built.condition_expression,
        "ExpressionAttributeNames": built.attribute_name_placeholders,
    }
    if built.attribute_value_placeholders:
        out["ExpressionAttributeValues"] = _typed(built.attribute_value_placeholders)
    return out


# --- normalisation and validation (all before any call) ---


def normalise(raw: str) -> str:
    """Trim, NFKC-normalise and case-fold: ``" Ada@Lovelace.io "`` -> ``"ada@lovelace.io"``."""
    if not isinstance(raw, str):
        raise ValidationError(f"expected a string, got {type(raw).__name__}; nothing was written")
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", raw.strip()).casefold())
    return folded.strip()


def normalise_email(raw: str) -> str:
    """Normalise an email; check: one @, a local part, a domain with an inner dot, no spaces."""
    value = normalise(raw)
    hint = "enter an address like ada@lovelace.io; nothing was written"
    if not value:
        raise ValidationError(f"email is empty; {hint}")
    if any(ch.isspace() for ch in value):
        raise ValidationError(f"email {raw!r} contains whitespace; {hint}")
    if value.count("@") != 1:
        raise ValidationError(f"email {raw!r} must contain exactly one '@'; {hint}")
    local, domain = value.split("@")
    if not local:
        raise ValidationError(f"email {raw!r} has nothing before the '@'; {hint}")
    if "." not in domain[1:-1]:
        raise ValidationError(f"email {raw!r} needs a domain with a dot, like lovelace.io; {hint}")
    if len(value) > C.MAX_EMAIL_LENGTH:
        raise ValidationError(
            f"email is {len(value)} characters, over the {C.MAX_EMAIL_LENGTH} an address may have; " + hint
        )
    return value


def normalise_username(raw: str) -> str:
    """Normalise a username (trim, NFKC, case-fold) and check it is not empty."""
    return normalise_value("username", raw, C.HANDLE_NAMESPACE)


def normalise_value(field_name: str, raw: str, namespace: str) -> str:
    """Normalise one unique value and check that its marker key fits DynamoDB's limit."""
    value = normalise_email(raw) if field_name == "email" else normalise(raw)
    if not value:
        raise ValidationError(f"{field_name} is empty; choose a value such as 'ada'. Nothing was written")
    key_bytes = len(marker_key(namespace, value)["PK"].encode("utf-8"))
    if key_bytes > C.MAX_PARTITION_KEY_BYTES:
        raise ValidationError(
            f"{field_name} is too long: its marker key would be {key_bytes:,} bytes (UTF-8), over "
            f"DynamoDB's {C.MAX_PARTITION_KEY_BYTES:,}-byte partition key limit; "
            "choose a shorter value. Nothing was written"
        )
    return value


def check_fields(fields: Mapping[str, str]) -> None:
    """Check a field -> namespace map: non-empty names, no '#', no namespace used twice."""
    if not fields:
        raise ValidationError("no unique fields configured; pass e.g. fields={'email': 'EMAIL'}")
    seen: dict[str, str] = {}
    for name, namespace in fields.items():
        if not name or name in RESERVED_ATTRIBUTES:
            raise ValidationError(f"{name!r} cannot be a unique field (reserved: PK, SK, id)")
        if not namespace or not re.fullmatch(r"[A-Z0-9_]+", namespace):
            raise ValidationError(
                f"namespace {namespace!r} for {name!r} must be upper-case letters, digits or '_' "
                "(it becomes part of the marker key UNIQ#<namespace>#<value>)"
            )
        if namespace in seen:
            raise ValidationError(
                f"fields {seen[namespace]!r} and {name!r} share namespace {namespace!r}; "
                "give each field its own namespace"
            )
        seen[namespace] = name
    if 1 + len(fields) > C.MAX_TRANSACT_ITEMS:
        raise ValidationError(
            f"{len(fields)} unique fields need {1 + len(fields)} actions in one transaction, "
            f"over DynamoDB's {C.MAX_TRANSACT_ITEMS}"
        )


def check_token(token: str | None) -> str:
    """The given ClientRequestToken if valid (1-36 characters), else a fresh uuid4."""
    if token is None:
        return str(uuid.uuid4())
    if not isinstance(token, str) or not 1 <= len(token) <= C.MAX_CLIENT_REQUEST_TOKEN_LENGTH:
        raise ValidationError(
            f"ClientRequestToken must be 1-{C.MAX_CLIENT_REQUEST_TOKEN_LENGTH} characters; "
            "omit it to get a fresh uuid4. Nothing was written"
        )
    return token


def _check_account_id(account_id: str) -> str:
    if not isinstance(account_id, str) or not account_id.strip():
        raise ValidationError("account_id must be a non-empty string; nothing was written")
    if len(account_key(account_id)["PK"].encode("utf-8")) > C.MAX_PARTITION_KEY_BYTES:
        raise ValidationError("account_id is too long for a partition key; nothing was written")
    return account_id


def _check_field(field_name: str, fields: Mapping[str, str]) -> str:
    if field_name not in fields:
        raise ValidationError(
            f"unknown unique field {field_name!r}; configured fields are: {', '.join(fields)}. "
            "Add it to `fields` to protect it. Nothing was written"
        )
    return fields[field_name]


# --- reading DynamoDB's answer ---


@dataclass(frozen=True)
class _Slot:
    """What one action of a transaction means, so a cancellation reason can be named."""

    role: Literal["create", "claim", "release", "guard", "check"]
    what: str
    field: str = ""
    value: str = ""


def translate_error(exc: ClientError, slots: Sequence[_Slot], what: str) -> LabkitError:
    """Map a failed call to labkit's error tree, naming the field or item each reason points at."""
    error = exc.response.get("Error", {})
    code, message = str(error.get("Code", "")), str(error.get("Message", ""))
    if code == "TransactionCanceledException":
        reasons = cancellation_reasons(exc)
        codes = [str(r.get("Code", "None")) for r in reasons]
        named = list(zip(slots, reasons, strict=False))
        if "TransactionConflict" in codes:
            return TransactionConflict(
                f"{what} collided with another transaction on the same items ({', '.join(codes)}); "
                "nothing was written — retry (resending with the same token is safe)",
                reasons,
            )
        invalid = [(s, r) for s, r in named if r.get("Code") == "ValidationError"]
        if invalid:
            slot, reason = invalid[0]
            return TransactionCancelled(
                f"DynamoDB rejected {slot.what} as invalid ({reason.get('Message', '')}); "
                "nothing was written — fix the input",
                reasons,
            )
        failed = [s for s, r in named if r.get("Code") == "ConditionalCheckFailed"]
        created = [s for s in failed if s.role == "create"]
        if created:
            return TransactionConflict(
                f"{created[0].what} already exists: this registration was probably applied "
                "already (resent after the 10-minute token window?); read the account instead "
                "of registering again",
                reasons,
            )
        guards = [s for s in failed if s.role in ("release", "guard", "check")]
        if guards:
            return TransactionConflict(
                f"{what} cancelled: {'; '.join(s.what for s in guards)} no longer holds; nothing "
                "was written — re-read the account and retry (run audit() if a marker is missing)",
                reasons,
            )
        claims = {s.field: s.value for s in failed if s.role == "claim"}
        if claims:
            return ValueTaken(claims, reasons)
        return TransactionCancelled(
            f"{what} was cancelled ({', '.join(codes) or message}); nothing was written", reasons
        )
    if code == "IdempotentParameterMismatchException":
        return IdempotencyMismatch(
            f"{what}: this ClientRequestToken was used in the last 10 minutes for a different "
            "request; use a new token for a new request, or resend the original request unchanged"
        )
    if code == "TransactionInProgressException":
        return ConflictError(
            f"{what}: the first request with this ClientRequestToken is still running; "
            "wait for it, then resend the same request",
            code,
        )
    if code == "ResourceNotFoundException":
        return DynamoError(
            f"{what}: the table does not exist ({message}); create it with labkit.ensure_table() or setup_lab()",
            code,
        )
    return DynamoError(f"{what} failed: {code}: {message}", code)


def _transact(client: DynamoDBClient, actions: list[dict[str, Any]], slots: list[_Slot], token: str, what: str) -> None:
    try:
        items = cast("list[TransactWriteItemTypeDef]", actions)
        client.transact_write_items(TransactItems=items, ClientRequestToken=token)
    except ClientError as exc:
        raise translate_error(exc, slots, what) from exc


# --- register ---


@dataclass(frozen=True)
class Registration:
    """A prepared sign-up. Submitting the same object again resends the same id and token."""

    account_id: str
    values: Mapping[str, str]
    namespaces: Mapping[str, str]
    token: str
    attributes: Mapping[str, Any] = field(default_factory=dict)

    def account_item(self) -> dict[str, Any]:
        """The account item (plain Python values)."""
        return {
            **account_key(self.account_id),
            "id": self.account_id,
            **self.attributes,
            **self.values,
        }

    def marker_items(self) -> list[dict[str, str]]:
        """One marker per unique value, owned by this account."""
        return [marker_item(self.namespaces[f], f, v, self.account_id) for f, v in self.values.items()]

    def transact_items(self, table: str) -> list[dict[str, Any]]:
        """The account Put and a marker Put per value, each guarded by attribute_not_exists(PK)."""
        return [
            {
                "Put": {
                    "TableName": table,
                    "Item": _typed(item),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            }
            for item in [self.account_item(), *self.marker_items()]
        ]

    def request(self, table: str) -> dict[str, Any]:
        """The complete TransactWriteItems request, token included."""
        return {"TransactItems": self.transact_items(table), "ClientRequestToken": self.token}

    def _slots(self) -> list[_Slot]:
        pk = account_key(self.account_id)["PK"]
        return [_Slot("create", f"account {pk}")] + [
            _Slot("claim", f"{f} marker", f, v) for f, v in self.values.items()
        ]


def prepare_registration(
    values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    /,
    *,
    fields: Mapping[str, str] = DEFAULT_FIELDS,
    attributes: Mapping[str, Any] | None = None,
    account_id: str | None = None,
    token: str | None = None,
    **named: str,
) -> Registration:
    """Validate and normalise a sign-up; fix its account id and token so a resend is identical."""
    check_fields(fields)
    pairs = list(values.items() if isinstance(values, Mapping) else values) + list(named.items())
    given: dict[str, str] = {}
    for name, raw in pairs:
        _check_field(name, fields)
        if name in given:
            raise ValidationError(f"field {name!r} given twice; give each unique field once")
        given[name] = raw
    missing = [f for f in fields if f not in given]
    if missing:
        raise ValidationError(
            f"missing {', '.join(missing)}: a registration needs every unique field "
            f"({', '.join(fields)}). Nothing was written"
        )
    extra = dict(attributes or {})
    clash = sorted(set(extra) & (RESERVED_ATTRIBUTES | set(fields)))
    if clash:
        raise ValidationError(
            f"attributes may not set {', '.join(clash)}: keys, id and unique fields are set by "
            "labkit. Nothing was written"
        )
    return Registration(
        account_id=_check_account_id(account_id) if account_id is not None else uuid.uuid4().hex,
        values={f: normalise_value(f, given[f], fields[f]) for f in fields},
        namespaces=dict(fields),
        token=check_token(token),
        attributes=extra,
    )


def taken_values(client: DynamoDBClient, table: str, registration: Registration) -> dict[str, str]:
    """Which of the registration's values already have a marker (one consistent BatchGet)."""
    keys = {marker_key(registration.namespaces[f], v)["PK"]: f for f, v in registration.values.items()}
    request: dict[str, Any] = {
        table: {
            "Keys": [_typed({"PK": pk, "SK": C.MARKER_SK}) for pk in keys],
            "ConsistentRead": True,
        }
    }
    found: list[dict[str, Any]] = []
    try:
        while request:
            out = client.batch_get_item(RequestItems=request)
            found += out.get("Responses", {}).get(table, [])
            request = dict(out.get("UnprocessedKeys") or {})
    except ClientError as exc:
        raise translate_error(exc, [], "checking which values are taken") from exc
    taken = {keys[_plain(item)["PK"]] for item in found}
    return {f: v for f, v in registration.values.items() if f in taken}


def submit(
    client: DynamoDBClient, table: str, registration: Registration, *, check_first: bool = False
) -> Registration:
    """Send a prepared registration as one TransactWriteItems; resending it is idempotent.

    ``check_first`` reads the markers before writing — a courtesy that fails most taken values
    early; it is not what makes the sign-up safe (two callers can both read "free"). The
    guarded transaction is. Raises :class:`ValueTaken` naming every taken field.
    """
    if check_first:
        taken = taken_values(client, table, registration)
        if taken:
            raise ValueTaken(taken)
    _transact(
        client,
        registration.transact_items(table),
        registration._slots(),
        registration.token,
        f"registering account {registration.account_id}",
    )
    return registration


def register(
    client: DynamoDBClient,
    table: str,
    values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    /,
    *,
    fields: Mapping[str, str] = DEFAULT_FIELDS,
    attributes: Mapping[str, Any] | None = None,
    account_id: str | None = None,
    token: str | None = None,
    check_first: bool = False,
    **named: str,
) -> Registration:
    """Register an account and a marker per unique value in one guarded transaction.

    ``register(client, table, email="ada@lovelace.io", username="ada")``. To retry after a lost
    response, resend with the same ``account_id`` and ``token`` (or :func:`submit` the
    same :class:`Registration`).
    """
    registration = prepare_registration(
        values, fields=fields, attributes=attributes, account_id=account_id, token=token, **named
    )
    return submit(client, table, registration, check_first=check_first)


def lose_next_response(client: DynamoDBClient, operation: str = "TransactWriteItems") -> None:
    """Drop the answer to this client's next ``operation`` after DynamoDB has applied it.

    The request really reaches DynamoDB and really takes effect; only the response never
    reaches the caller, who sees botocore's ``ConnectionClosedError`` — as after a network
    blip. That is the moment a retry must not register the account twice.
    """
    event = f"after-call.dynamodb.{operation}"
    fired = False

    def drop(**_: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        client.meta.events.unregister(event, drop)
        raise ConnectionClosedError(endpoint_url=client.meta.endpoint_url)

    client.meta.events.register(event, drop)


# --- the anti-pattern, kept on purpose ---


def email_in_use(client: DynamoDBClient, table: str, email: str, *, read: Literal["index", "scan"] = "index") -> bool:
    """Whether an account has this email: Query the GSI (eventually consistent), or Scan."""
    value = normalise_email(email)
    try:
        if read == "index":
            out = client.query(
                TableName=table,
                IndexName=C.EMAIL_INDEX_NAME,
                KeyConditionExpression="email = :e",
                ExpressionAttributeValues={":e": {"S": value}},
                Select="COUNT",
            )
            return int(out.get("Count", 0)) > 0
        if read == "scan":
            kwargs: dict[str, Any] = {
                "TableName": table,
                "FilterExpression": "email = :e AND begins_with(PK, :acct)",
                "ExpressionAttributeValues": {":e": {"S": value}, ":acct": {"S": C.ACCOUNT_PREFIX}},
                "ConsistentRead": True,
                "Select": "COUNT",
            }
            while True:
                page = client.scan(**kwargs)
                if int(page.get("Count", 0)) > 0:
                    return True
                if "LastEvaluatedKey" not in page:
                    return False
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    except ClientError as exc:
        raise translate_error(exc, [], f"looking up email {value!r}") from exc
    raise ValidationError(f"read must be 'index' or 'scan', not {read!r}")


def register_check_then_write(
    client: DynamoDBClient,
    table: str,
    *,
    email: str,
    username: str,
    read: Literal["index", "scan"] = "index",
    account_id: str | None = None,
) -> str:
    """ANTI-PATTERN (kept for the lesson): check the email is free, then PutItem the account.

    Wrong because the check and the write are two requests: two sign-ups that both read before
    either writes both see "free" and both write — two accounts, one email, and no marker to
    flag it. A strongly consistent read (``read="scan"``) does not close the gap; a GSI read is
    stale besides. Use :func:`register`. Returns the new account id.
    """
    values = {
        "email": normalise_value("email", email, C.EMAIL_NAMESPACE),
        "username": normalise_value("username", username, C.HANDLE_NAMESPACE),
    }
    if read not in ("index", "scan"):
        raise ValidationError(f"read must be 'index' or 'scan', not {read!r}")
    new_id = _check_account_id(account_id) if account_id is not None else uuid.uuid4().hex
    if email_in_use(client, table, values["email"], read=read):
        raise ValueTaken({"email": values["email"]})
    item = {**account_key(new_id), "id": new_id, **values}
    try:
        client.put_item(TableName=table, Item=_typed(item))
    except ClientError as exc:
        raise translate_error(exc, [], f"writing account {new_id}") from exc
    return new_id


# --- lifecycle: change a value, delete an account ---


def get_account(client: DynamoDBClient, table: str, account_id: str) -> dict[str, Any] | None:
    """The account item (strongly consistent read), or None if there is none."""
    try:
        out = client.get_item(TableName=table, Key=_typed(account_key(account_id)), ConsistentRead=True)
    except ClientError as exc:
        raise translate_error(exc, [], f"reading account {account_id}") from exc
    item = out.get("Item")
    return _plain(item) if item else None


def _require_account(client: DynamoDBClient, table: str, account_id: str) -> dict[str, Any]:
    account = get_account(client, table, account_id)
    if account is None:
        raise NotFound(f"account {account_id!r} does not exist; check the id (register it first)")
    return account


def change_value(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    field_name: str,
    new_value: str,
    *,
    fields: Mapping[str, str] = DEFAULT_FIELDS,
    token: str | None = None,
) -> bool:
    """Move an account to a new unique value in one transaction; False if it already holds it.

    Claims the new marker (attribute_not_exists), releases the old one (guarded by owner),
    and updates the account (guarded by its current value). Raises :class:`ValueTaken` if
    the new value is someone else's; nothing changes then.
    """
    check_fields(fields)
    namespace = _check_field(field_name, fields)
    value = normalise_value(field_name, new_value, namespace)
    request_token = check_token(token)
    _check_account_id(account_id)
    account = _require_account(client, table, account_id)
    old = account.get(field_name)
    if old == value:
        return False
    actions: list[dict[str, Any]] = [
        {
            "Put": {
                "TableName": table,
                "Item": _typed(marker_item(namespace, field_name, value, account_id)),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
    ]
    slots = [_Slot("claim", f"new {field_name} marker", field_name, value)]
    if old is not None:
        actions.append(
            {
                "Delete": {
                    "TableName": table,
                    "Key": _typed(marker_key(namespace, old)),
                    **_condition(Attr("owner").eq(account_id)),
                }
            }
        )
        slots.append(_Slot("release", f"the old {field_name} marker {old!r} owned by {account_id}"))
    guard = Attr(field_name).eq(old) if old is not None else Attr(field_name).not_exists()
    cond = _condition(guard)
    actions.append(
        {
            "Update": {
                "TableName": table,
                "Key": _typed(account_key(account_id)),
                "UpdateExpression": "SET #new_field = :new_value",
                "ConditionExpression": cond["ConditionExpression"],
                "ExpressionAttributeNames": {
                    **cond["ExpressionAttributeNames"],
                    "#new_field": field_name,
                },
                "ExpressionAttributeValues": {
                    **cond.get("ExpressionAttributeValues", {}),
                    ":new_value": {"S": value},
                },
            }
        }
    )
    slots.append(_Slot("guard", f"account {account_id} with {field_name} {old!r}"))
    _transact(client, actions, slots, request_token, f"changing {field_name} of {account_id}")
    return True


def change_email(
    client: DynamoDBClient, table: str, account_id: str, new_email: str, *, token: str | None = None
) -> bool:
    """Change an account's email (see :func:`change_value`)."""
    return change_value(client, table, account_id, "email", new_email, token=token)


def change_username(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    new_username: str,
    *,
    token: str | None = None,
) -> bool:
    """Change an account's username (see :func:`change_value`)."""
    return change_value(client, table, account_id, "username", new_username, token=token)


def delete_account(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    *,
    fields: Mapping[str, str] = DEFAULT_FIELDS,
    token: str | None = None,
) -> dict[str, Any]:
    """Delete an account and all its markers in one transaction; returns the deleted account.

    The account Delete is guarded by its current values, each marker Delete by its owner,
    so a concurrent change cancels the delete instead of stranding a marker.
    """
    check_fields(fields)
    request_token = check_token(token)
    _check_account_id(account_id)
    account = _require_account(client, table, account_id)
    held = {f: str(account[f]) for f in fields if f in account}
    guard: ConditionBase = Attr("PK").exists()
    for f, v in held.items():
        guard = guard & Attr(f).eq(v)
    actions: list[dict[str, Any]] = [
        {
            "Delete": {
                "TableName": table,
                "Key": _typed(account_key(account_id)),
                **_condition(guard),
            }
        }
    ]
    slots = [_Slot("guard", f"account {account_id} with {held}")]
    for f, v in held.items():
        actions.append(
            {
                "Delete": {
                    "TableName": table,
                    "Key": _typed(marker_key(fields[f], v)),
                    **_condition(Attr("owner").eq(account_id)),
                }
            }
        )
        slots.append(_Slot("release", f"the {f} marker {v!r} owned by {account_id}"))
    _transact(client, actions, slots, request_token, f"deleting account {account_id}")
    return account


# --- inspect ---


def _frame(rows: list[dict[str, Any]], first: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(first))
    cols = [c for c in first if c in frame.columns] + sorted(c for c in frame.columns if c not in first)
    return frame[cols]


def account_items(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    *,
    fields: Mapping[str, str] = DEFAULT_FIELDS,
) -> pd.DataFrame:
    """The account and its markers side by side; a missing marker shows ``present=False``."""
    account = _require_account(client, table, account_id)
    rows: list[dict[str, Any]] = [{**account, "present": True}]
    for f, namespace in fields.items():
        if f not in account:
            continue
        key = marker_key(namespace, str(account[f]))
        try:
            out = client.get_item(TableName=table, Key=_typed(key), ConsistentRead=True)
        except ClientError as exc:
            raise translate_error(exc, [], f"reading the {f} marker") from exc
        item = out.get("Item")
        rows.append({**_plain(item), "present": True} if item else {**key, "present": False})
    return _frame(rows, ["PK", "SK", "id", "owner", *fields, "field", "value", "present"])


def table_items(client: DynamoDBClient, table: str) -> pd.DataFrame:
    """Every item in the table (consistent Scan), sorted by key: accounts and markers together."""
    try:
        rows = invariants.scan_rows(client, table)
    except ClientError as exc:
        raise translate_error(exc, [], f"scanning {table}") from exc
    frame = _frame(rows, ["PK", "SK", "id", "owner", "email", "username", "field", "value"])
    return frame.sort_values(["PK", "SK"], ignore_index=True) if not frame.empty else frame


# --- audit and repair ---


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit` found; each frame has one row per problem (from labkit.invariants)."""

    orphan_markers: pd.DataFrame
    missing_markers: pd.DataFrame
    several_owners: pd.DataFrame
    findings: pd.DataFrame

    @property
    def ok(self) -> bool:
        """True when every marker has a live owner holding its value, and every value a marker."""
        return bool(self.findings.empty)

    def summary(self) -> str:
        """One line per finding, or "audit: no findings"."""
        if self.ok:
            return "audit: no findings"
        lines = [f"audit: {len(self.findings)} finding(s)"]
        for row in self.findings.itertuples(index=False):
            lines.append(f"  {row.kind}: {row.attribute} {row.value!r} — {row.detail}")
        return "\n".join(lines)


def audit(client: DynamoDBClient, table: str, *, fields: Mapping[str, str] = DEFAULT_FIELDS) -> AuditReport:
    """Scan the table and report orphan markers, missing markers and values with several owners."""
    check_fields(fields)
    items = table_items(client, table)
    if items.empty:
        items = pd.DataFrame(columns=["PK", "SK"])
    owners = [invariants.several_owners(items, f) for f in fields]
    return AuditReport(
        orphan_markers=invariants.orphan_markers(items, fields),
        missing_markers=invariants.missing_markers(items, fields),
        several_owners=pd.concat(owners, ignore_index=True) if owners else pd.DataFrame(),
        findings=invariants.check_uniqueness(items, fields),
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
    fields: Mapping[str, str] = DEFAULT_FIELDS,
) -> RepairReport:
    """Fix what an audit found, each fix its own guarded transaction; conflicts are reported.

    An orphan marker is deleted only if it still has the owner the audit saw and that owner
    still does not hold the value; an owner-less marker (like the article's) whose value one
    account holds is given to that account instead. A missing marker is created
    (attribute_not_exists) only while the account still holds the value; a marker owned by
    someone else is never overwritten. Values with several owners are only reported.
    """
    check_fields(fields)
    report = report if report is not None else audit(client, table, fields=fields)
    done = RepairReport()
    missing = _rows(report.missing_markers)
    claimants: dict[str, list[Mapping[str, Any]]] = {}
    for row in missing:
        pk = marker_key(fields[str(row["attribute"])], str(row["value"]))["PK"]
        claimants.setdefault(pk, []).append(row)
    adopted: set[str] = set()
    for row in _rows(report.orphan_markers):
        pk = str(row["marker"])
        if not isinstance(row.get("owner"), str) and len(claimants.get(pk, [])) == 1:
            if _adopt(client, table, pk, claimants[pk][0], done):
                adopted.add(pk)
            continue
        _repair_orphan(client, table, row, done)
    for row in missing:
        pk = marker_key(fields[str(row["attribute"])], str(row["value"]))["PK"]
        if pk not in adopted:
            _repair_missing(client, table, row, fields, done)
    for row in _rows(report.several_owners):
        done.conflicts.append(
            f"{row['attribute']} {row['value']!r} is held by {', '.join(row['records'])}; "
            "decide which account keeps it, then change the others"
        )
    return done


def _adopt(client: DynamoDBClient, table: str, pk: str, claimant: Mapping[str, Any], done: RepairReport) -> bool:
    """Give an owner-less marker to the one account holding its value (no unprotected gap)."""
    attribute, value = str(claimant["attribute"]), str(claimant["value"])
    account_id = str(claimant["account"])[len(C.ACCOUNT_PREFIX) :]
    cond = _condition(Attr("owner").not_exists())
    actions: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": table,
                "Key": _typed({"PK": pk, "SK": C.MARKER_SK}),
                "UpdateExpression": "SET #o = :owner, #f = :field, #v = :value",
                "ConditionExpression": cond["ConditionExpression"],
                "ExpressionAttributeNames": {
                    **cond["ExpressionAttributeNames"],
                    "#o": "owner",
                    "#f": "field",
                    "#v": "value",
                },
                "ExpressionAttributeValues": _typed({":owner": account_id, ":field": attribute, ":value": value}),
            }
        },
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": _typed(account_key(account_id)),
                **_condition(Attr(attribute).eq(value)),
            }
        },
    ]
    slots = [_Slot("check", f"marker {pk} without owner"), _Slot("check", f"account {account_id} holding {value!r}")]
    try:
        _transact(client, actions, slots, check_token(None), f"adopting marker {pk}")
    except (ConflictError, TransactionCancelled) as exc:
        done.conflicts.append(str(exc))
        return False
    done.adopted.append(pk)
    return True


def _repair_orphan(client: DynamoDBClient, table: str, row: Mapping[str, Any], done: RepairReport) -> None:
    pk, owner = str(row["marker"]), row.get("owner")
    key = {"PK": pk, "SK": C.MARKER_SK}
    has_owner = isinstance(owner, str) and owner != ""
    guard = Attr("owner").eq(owner) if has_owner else Attr("owner").not_exists()
    actions: list[dict[str, Any]] = [{"Delete": {"TableName": table, "Key": _typed(key), **_condition(guard)}}]
    slots = [_Slot("check", f"marker {pk} with owner {owner!r}")]
    if has_owner:
        still_free = Attr("PK").not_exists() | Attr(str(row["attribute"])).ne(row["value"])
        actions.append(
            {"ConditionCheck": {"TableName": table, "Key": _typed(account_key(str(owner))), **_condition(still_free)}}
        )
        slots.append(_Slot("check", f"account {owner} not holding {row['value']!r}"))
    try:
        _transact(client, actions, slots, check_token(None), f"deleting orphan marker {pk}")
    except (ConflictError, TransactionCancelled) as exc:
        done.conflicts.append(str(exc))
    else:
        done.deleted.append(pk)


def _repair_missing(
    client: DynamoDBClient,
    table: str,
    row: Mapping[str, Any],
    fields: Mapping[str, str],
    done: RepairReport,
) -> None:
    account_pk, attribute, value = str(row["account"]), str(row["attribute"]), str(row["value"])
    account_id = account_pk[len(C.ACCOUNT_PREFIX) :]
    item = marker_item(fields[attribute], attribute, value, account_id)
    actions: list[dict[str, Any]] = [
        {"Put": {"TableName": table, "Item": _typed(item), "ConditionExpression": "attribute_not_exists(PK)"}},
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": _typed(account_key(account_id)),
                **_condition(Attr(attribute).eq(value)),
            }
        },
    ]
    slots = [
        _Slot("claim", f"{attribute} marker", attribute, value),
        _Slot("check", f"account {account_id} holding {value!r}"),
    ]
    try:
        _transact(client, actions, slots, check_token(None), f"creating marker {item['PK']}")
    except ValueTaken:
        done.conflicts.append(
            f"{item['PK']} belongs to another owner; not overwritten — change {account_pk}'s "
            f"{attribute} or decide who keeps it"
        )
    except (ConflictError, TransactionCancelled) as exc:
        done.conflicts.append(str(exc))
    else:
        done.created.append(item["PK"])


# --- the seed's transaction, as written ---

#: The article's TransactWriteItems request, verbatim (table "accounts"; its locks carry no owner).
SEED_TRANSACTION_JSON: Final = """\
{
  "TransactItems": [
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "ACCT#a1f9c3"},
          "SK": {"S": "PROFILE"},
          "email": {"S": "ada@lovelace.io"},
          "username": {"S": "ada"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    },
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "UNIQ#EMAIL#ada@lovelace.io"},
          "SK": {"S": "LOCK"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    },
    {
      "Put": {
        "TableName": "accounts",
        "Item": {
          "PK": {"S": "UNIQ#HANDLE#ada"},
          "SK": {"S": "LOCK"}
        },
        "ConditionExpression": "attribute_not_exists(PK)"
      }
    }
  ]
}
"""


def seed_transaction(table: str) -> dict[str, Any]:
    """The article's request with its table name ("accounts") replaced by ``table``."""
    request: dict[str, Any] = json.loads(SEED_TRANSACTION_JSON)
    for action in request["TransactItems"]:
        for body in action.values():
            body["TableName"] = table
    return request


def send_seed_transaction(client: DynamoDBClient, table: str) -> None:
    """Send the article's request as written (no token); a second send is cancelled."""
    slots = [
        _Slot("create", "account ACCT#a1f9c3"),
        _Slot("claim", "email marker", "email", "ada@lovelace.io"),
        _Slot("claim", "username marker", "username", "ada"),
    ]
    try:
        client.transact_write_items(**seed_transaction(table))
    except ClientError as exc:
        raise translate_error(exc, slots, "sending the article's transaction") from exc


__all__ = [
    "AuditReport",
    "DEFAULT_FIELDS",
    "RESERVED_ATTRIBUTES",
    "Registration",
    "RepairReport",
    "SEED_TRANSACTION_JSON",
    "account_items",
    "account_key",
    "audit",
    "cancellation_reasons",
    "change_email",
    "change_username",
    "change_value",
    "check_fields",
    "check_token",
    "delete_account",
    "email_in_use",
    "get_account",
    "lose_next_response",
    "marker_item",
    "marker_key",
    "normalise",
    "normalise_email",
    "normalise_username",
    "normalise_value",
    "prepare_registration",
    "register",
    "register_check_then_write",
    "repair",
    "seed_transaction",
    "send_seed_transaction",
    "submit",
    "table_items",
    "taken_values",
    "translate_error",
]
