"""Normalising unique values: one spelling per value, look-alikes refused (before any call)."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from .. import constants as C
from ..errors import (
    ValidationError,
)
from .keys import marker_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

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


__all__ = ["normalise", "normalise_email", "normalise_username", "normalise_value"]
