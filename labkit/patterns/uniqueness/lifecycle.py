"""An account's life after sign-up: read it, change a unique value, delete it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...shared.codec import from_wire, to_wire
from ...shared.errors import NotFound
from .keys import (
    DEFAULT_FIELDS,
    Fields,
    FieldSpec,
    account_key,
    attributes,
    check_account_id,
    check_field,
    check_fields,
    check_key_length,
    check_token,
    equals_params,
    field_value,
    label,
    marker_item,
    marker_key,
    namespace_for,
    placeholder,
)
from .normalise import normalise_value
from .reasons import Slot, named_errors
from .resend import Prepared, send_once

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def get_account(client: DynamoDBClient, table: str, account_id: str) -> dict[str, Any] | None:
    """The account item (strongly consistent read), or None if there is none."""
    with named_errors(f"reading account {account_id}", table):
        out = client.get_item(TableName=table, Key=to_wire(account_key(account_id)), ConsistentRead=True)
    item = out.get("Item")
    return from_wire(item) if item else None


def require_account(client: DynamoDBClient, table: str, account_id: str) -> dict[str, Any]:
    """The account item (strongly consistent read); :class:`NotFound` if there is none."""
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
    fields: Fields = DEFAULT_FIELDS,
    token: str | None = None,
) -> bool:
    """Move an account to a new unique value in one transaction; False if it already holds it.

    Claims the new marker (attribute_not_exists), releases the old one (guarded by owner),
    and updates the account (guarded by its current value). A composite that uses the
    attribute (``("tenant", "email")``) swaps its marker in the same transaction. Raises
    :class:`ValueTaken` if the new value is someone else's; nothing changes then.

    Safe to retry: pass the same ``token`` after a lost answer (or an OutcomeUnknown) and the
    identical request is resent, so DynamoDB applies it once and the retry returns True too.
    """
    fields = check_fields(fields)
    check_field(field_name, fields)
    value = normalise_value(field_name, new_value, namespace_for(field_name, fields))
    request_token = check_token(token)
    check_account_id(account_id)
    key = ("change", table, request_token, account_id, field_name, value)
    return send_once(
        client,
        key,
        request_token,
        token is not None,
        lambda: _prepare_change(client, table, account_id, field_name, value, fields),
    )


def _prepare_change(
    client: DynamoDBClient, table: str, account_id: str, field_name: str, value: str, fields: Mapping[FieldSpec, str]
) -> Prepared[bool] | bool:
    account = require_account(client, table, account_id)
    old = account.get(field_name)
    if old == value:
        return False
    after = {**account, field_name: value}
    actions: list[dict[str, Any]] = []
    slots: list[Slot] = []
    guarded: dict[str, str | None] = {field_name: None if old is None else str(old)}
    for spec in check_field(field_name, fields):
        name, namespace = label(spec), fields[spec]
        new_v, old_v = field_value(spec, after), field_value(spec, account)
        if new_v is not None:
            check_key_length(spec, namespace, new_v)
            parts = None if isinstance(spec, str) else {a: str(after[a]) for a in spec}
            item = marker_item(namespace, name, new_v, account_id, parts)
            actions.append(
                {"Put": {"TableName": table, "Item": to_wire(item), "ConditionExpression": "attribute_not_exists(PK)"}}
            )
            slots.append(Slot("claim", f"new {name} marker", name, new_v))
        if old_v is not None:
            owned = equals_params({"owner": account_id})
            actions.append({"Delete": {"TableName": table, "Key": to_wire(marker_key(namespace, old_v)), **owned}})
            slots.append(Slot("release", f"the old {name} marker {old_v!r} owned by {account_id}"))
        for other in (a for a in spec if a != field_name and not isinstance(spec, str)):
            guarded.setdefault(other, str(account[other]) if other in account else None)
    update = equals_params(guarded)
    new_tag = placeholder(":new_", field_name, update.get("ExpressionAttributeValues", {}))
    actions.append(
        {
            "Update": {
                "TableName": table,
                "Key": to_wire(account_key(account_id)),
                "UpdateExpression": f"SET {placeholder('#', field_name, {})} = {new_tag}",
                **update,
                "ExpressionAttributeValues": {**update.get("ExpressionAttributeValues", {}), new_tag: {"S": value}},
            }
        }
    )
    slots.append(Slot("guard", f"account {account_id} with {field_name} {old!r}"))
    return Prepared(actions, slots, f"changing {field_name} of {account_id}", True)


def change_email(
    client: DynamoDBClient, table: str, account_id: str, new_email: str, *, token: str | None = None
) -> bool:
    """Change an account's email (see :func:`change_value`); safe to retry with the same ``token``."""
    return change_value(client, table, account_id, "email", new_email, token=token)


def change_username(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    new_username: str,
    *,
    token: str | None = None,
) -> bool:
    """Change an account's username (see :func:`change_value`); safe to retry with the same ``token``."""
    return change_value(client, table, account_id, "username", new_username, token=token)


def delete_account(
    client: DynamoDBClient,
    table: str,
    account_id: str,
    *,
    fields: Fields = DEFAULT_FIELDS,
    token: str | None = None,
) -> dict[str, Any]:
    """Delete an account and all its markers in one transaction; returns the deleted account.

    The account Delete is guarded by its current values, each marker Delete by its owner,
    so a concurrent change cancels the delete instead of stranding a marker.

    Safe to retry: pass the same ``token`` after a lost answer (or an OutcomeUnknown); the
    identical request is resent and the retry returns the same account instead of raising
    :class:`NotFound`. Without a pinned token a retry finds no account and raises NotFound.
    """
    fields = check_fields(fields)
    request_token = check_token(token)
    check_account_id(account_id)
    key = ("delete", table, request_token, account_id, tuple(fields.items()))
    return send_once(
        client, key, request_token, token is not None, lambda: _prepare_delete(client, table, account_id, fields)
    )


def _prepare_delete(
    client: DynamoDBClient, table: str, account_id: str, fields: Mapping[FieldSpec, str]
) -> Prepared[dict[str, Any]]:
    account = require_account(client, table, account_id)
    held = {f: str(account[f]) for f in attributes(fields) if f in account}
    guard = equals_params(dict(held), first="attribute_exists(PK)")
    actions: list[dict[str, Any]] = [{"Delete": {"TableName": table, "Key": to_wire(account_key(account_id)), **guard}}]
    slots = [Slot("guard", f"account {account_id} with {held}")]
    for spec, namespace in fields.items():
        marker_value = field_value(spec, held)
        if marker_value is None:
            continue
        actions.append(
            {
                "Delete": {
                    "TableName": table,
                    "Key": to_wire(marker_key(namespace, marker_value)),
                    **equals_params({"owner": account_id}),
                }
            }
        )
        slots.append(Slot("release", f"the {label(spec)} marker {marker_value!r} owned by {account_id}"))
    return Prepared(actions, slots, f"deleting account {account_id}", account)


__all__ = ["change_email", "change_username", "change_value", "delete_account", "get_account", "require_account"]
