"""Keys, items and the checks on them: accounts, markers, fields, tokens (all before any call)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from boto3.dynamodb.conditions import ConditionBase, ConditionExpressionBuilder

from .. import constants as C
from ..codec import to_wire
from ..errors import (
    ValidationError,
)

if TYPE_CHECKING:
    pass

#: Which account attributes are unique, and the marker namespace each one uses.
DEFAULT_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {"email": C.EMAIL_NAMESPACE, "username": C.HANDLE_NAMESPACE}
)
#: Attribute names a unique field or an extra attribute may not take.
RESERVED_ATTRIBUTES: Final = frozenset({"PK", "SK", "id"})


def account_key(account_id: str) -> dict[str, str]:
    """The primary key of an account item."""
    return {"PK": f"{C.ACCOUNT_PREFIX}{account_id}", "SK": C.ACCOUNT_SK}


def marker_key(namespace: str, value: str) -> dict[str, str]:
    """The primary key of the marker that reserves ``value`` in ``namespace``."""
    return {"PK": f"{C.MARKER_PREFIX}{namespace}#{value}", "SK": C.MARKER_SK}


def marker_item(namespace: str, field_name: str, value: str, owner: str) -> dict[str, str]:
    """A marker item: its key is the value; ``owner`` is the account that holds it."""
    return {**marker_key(namespace, value), "owner": owner, "field": field_name, "value": value}


def _condition(cond: ConditionBase) -> dict[str, Any]:
    """ConditionExpression + typed placeholders for one transaction action."""
    built = ConditionExpressionBuilder().build_expression(cond)
    out: dict[str, Any] = {
        "ConditionExpression": built.condition_expression,
        "ExpressionAttributeNames": built.attribute_name_placeholders,
    }
    if built.attribute_value_placeholders:
        out["ExpressionAttributeValues"] = to_wire(built.attribute_value_placeholders)
    return out


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


__all__ = [
    "DEFAULT_FIELDS",
    "RESERVED_ATTRIBUTES",
    "account_key",
    "check_fields",
    "check_token",
    "marker_item",
    "marker_key",
]
