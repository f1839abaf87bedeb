"""Keys, items and the checks on them: accounts, markers, fields, tokens (all before any call)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from boto3.dynamodb.conditions import Attr, ConditionBase, ConditionExpressionBuilder

from ...shared import constants as C
from ...shared.codec import to_wire
from ...shared.errors import ValidationError
from ...shared.validation import check_text

#: A unique field: one attribute (``"email"``) or a composite of several (``("tenant", "email")``).
FieldSpec = str | tuple[str, ...]
#: What ``fields=`` accepts: each unique field (an attribute or a composite) -> its marker namespace.
Fields = Mapping[str, str] | Mapping[tuple[str, ...], str] | Mapping[FieldSpec, str]
#: Separator between the parts of a composite marker value; ``#`` and ``\\`` inside a part are
#: escaped with a backslash, so two different tuples never give the same marker value.
COMPOSITE_SEPARATOR: Final = "#"

#: Which account attributes are unique, and the marker namespace each one uses.
DEFAULT_FIELDS: Final[Mapping[str | tuple[str, ...], str]] = MappingProxyType(
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


def marker_item(
    namespace: str, field_name: str, value: str, owner: str, parts: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A marker item: its key is the value; ``owner`` is the account that holds it.

    A composite's marker also records its ``parts`` (attribute -> normalised value).
    """
    item: dict[str, Any] = {**marker_key(namespace, value), "owner": owner, "field": field_name, "value": value}
    if parts is not None:
        item["parts"] = dict(parts)
    return item


def label(spec: FieldSpec) -> str:
    """A field's name in findings and errors: ``email``, or ``tenant+email`` for a composite."""
    return spec if isinstance(spec, str) else "+".join(spec)


def parts_of(spec: FieldSpec) -> tuple[str, ...]:
    """The account attributes a field is made of."""
    return (spec,) if isinstance(spec, str) else spec


def attributes(fields: Fields) -> list[str]:
    """Every account attribute some unique field uses, in order, each once."""
    return list(dict.fromkeys(a for spec in fields for a in parts_of(spec)))


def join_parts(parts: Sequence[str]) -> str:
    """The marker value of a composite: parts escaped (``\\`` -> ``\\\\``, ``#`` -> ``\\#``), joined by ``#``."""
    return COMPOSITE_SEPARATOR.join(p.replace("\\", "\\\\").replace("#", "\\#") for p in parts)


def split_parts(value: str) -> list[str]:
    """The parts of a composite marker value (the inverse of :func:`join_parts`)."""
    parts: list[str] = []
    current, escaped = "", False
    for ch in value:
        if escaped:
            current, escaped = current + ch, False
        elif ch == "\\":
            escaped = True
        elif ch == COMPOSITE_SEPARATOR:
            parts, current = [*parts, current], ""
        else:
            current += ch
    return [*parts, current]


def field_value(spec: FieldSpec, values: Mapping[str, Any]) -> str | None:
    """The marker value of ``spec`` for an account's ``values``; None if a part is absent."""
    if isinstance(spec, str):
        return None if values.get(spec) is None else str(values[spec])
    if any(values.get(a) is None for a in spec):
        return None
    return join_parts([str(values[a]) for a in spec])


def holds(spec: FieldSpec, value: str) -> ConditionBase:
    """Condition: the account holds ``value`` (every part of a composite)."""
    pairs = list(zip(parts_of(spec), [value] if isinstance(spec, str) else split_parts(value), strict=True))
    cond: ConditionBase = Attr(pairs[0][0]).eq(pairs[0][1])
    for name, part in pairs[1:]:
        cond = cond & Attr(name).eq(part)
    return cond


def namespace_for(attribute: str, fields: Mapping[FieldSpec, str]) -> str:
    """The namespace a value of ``attribute`` is checked against (its own, else its composite's)."""
    return fields[attribute] if attribute in fields else fields[check_field(attribute, fields)[0]]


def check_key_length(spec: FieldSpec, namespace: str, value: str) -> None:
    """ValidationError if the marker key of ``value`` is over DynamoDB's partition key limit."""
    key_bytes = len(marker_key(namespace, value)["PK"].encode("utf-8"))
    if key_bytes > C.MAX_PARTITION_KEY_BYTES:
        raise ValidationError(
            f"{label(spec)} is too long: its marker key would be {key_bytes:,} bytes (UTF-8), over "
            f"DynamoDB's {C.MAX_PARTITION_KEY_BYTES:,}-byte partition key limit; "
            "nothing was written. Choose a shorter value."
        )


def spec_of(fields: Mapping[FieldSpec, str], name: str) -> FieldSpec:
    """The field whose :func:`label` is ``name``."""
    return next(spec for spec in fields if label(spec) == name)


def placeholder(prefix: str, name: str, taken: Mapping[str, Any]) -> str:
    """A readable placeholder for ``name`` (``#email``, ``:new_email``) not yet in ``taken``; other
    characters than letters, digits and ``_`` become ``_``, a clash gets a number."""
    base = prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)
    tag, n = base, 1
    while tag in taken:
        tag, n = f"{base}{n}", n + 1
    return tag


def equals_params(values: Mapping[str, str | None], *, first: str = "") -> dict[str, Any]:
    """``#email = :email AND attribute_not_exists(#tenant)``: each attribute holds its value (None: has
    none), with one readable placeholder per name and value — the condition a person writes by hand,
    so notebook 02's plain boto3 recipes are the very requests labkit sends. ``first`` (e.g.
    ``attribute_exists(PK)``) leads the expression."""
    parts = [first] if first else []
    names: dict[str, str] = {}
    typed: dict[str, Any] = {}
    for attribute, value in values.items():
        name = placeholder("#", attribute, names)
        names[name] = attribute
        if value is None:
            parts.append(f"attribute_not_exists({name})")
        else:
            tag = placeholder(":", attribute, typed)
            typed[tag] = {"S": value}
            parts.append(f"{name} = {tag}")
    out: dict[str, Any] = {"ConditionExpression": " AND ".join(parts)}
    if names:
        out["ExpressionAttributeNames"] = names
    if typed:
        out["ExpressionAttributeValues"] = typed
    return out


def condition_params(cond: ConditionBase) -> dict[str, Any]:
    """``ConditionExpression`` and its typed placeholders, to spread into one transaction action."""
    built = ConditionExpressionBuilder().build_expression(cond)
    out: dict[str, Any] = {
        "ConditionExpression": built.condition_expression,
        "ExpressionAttributeNames": built.attribute_name_placeholders,
    }
    if built.attribute_value_placeholders:
        out["ExpressionAttributeValues"] = to_wire(built.attribute_value_placeholders)
    return out


def check_fields(fields: Fields) -> dict[FieldSpec, str]:
    """Check a field -> namespace map (valid names or composites, no namespace used twice); return it."""
    if not fields:
        raise ValidationError("no unique fields configured; pass e.g. fields={'email': 'EMAIL'}")
    seen: dict[str, str] = {}
    for spec, namespace in fields.items():
        names = parts_of(spec) if isinstance(spec, str | tuple) else ()
        if not names or (isinstance(spec, tuple) and (len(spec) < 2 or len(set(spec)) < len(spec))):
            raise ValidationError(
                f"{spec!r} is not a unique field: give an attribute name ('email') or a tuple of two or "
                "more different attribute names (('tenant', 'email'))"
            )
        for name in names:
            if not isinstance(name, str) or not name or name in RESERVED_ATTRIBUTES or "+" in name:
                raise ValidationError(f"{name!r} cannot be a unique field (reserved: PK, SK, id; no '+')")
        if not isinstance(namespace, str) or not re.fullmatch(r"[A-Z0-9_]+", namespace):
            raise ValidationError(
                f"namespace {namespace!r} for {label(spec)!r} must be upper-case letters, digits or '_' "
                "(it becomes part of the marker key UNIQ#<namespace>#<value>)"
            )
        if namespace in seen:
            raise ValidationError(
                f"fields {seen[namespace]!r} and {label(spec)!r} share namespace {namespace!r}; "
                "give each field its own namespace"
            )
        seen[namespace] = label(spec)
    if 1 + len(fields) > C.MAX_TRANSACT_ITEMS:
        raise ValidationError(
            f"{len(fields)} unique fields need {1 + len(fields)} actions in one transaction, "
            f"over DynamoDB's {C.MAX_TRANSACT_ITEMS}"
        )
    return {spec: namespace for spec, namespace in fields.items()}


def check_token(token: str | None) -> str:
    """The given ClientRequestToken if valid (1-36 characters), else a fresh uuid4."""
    if token is None:
        return str(uuid.uuid4())
    if not isinstance(token, str) or not 1 <= len(token) <= C.MAX_CLIENT_REQUEST_TOKEN_LENGTH:
        raise ValidationError(
            f"ClientRequestToken must be 1-{C.MAX_CLIENT_REQUEST_TOKEN_LENGTH} characters; "
            "nothing was written. Omit it to get a fresh uuid4."
        )
    return token


def check_account_id(account_id: str) -> str:
    """``account_id`` if it can be part of an account's key (ValidationError, nothing written, if not)."""
    check_text("account_id", account_id, hint="nothing was written")
    if len(account_key(account_id)["PK"].encode("utf-8")) > C.MAX_PARTITION_KEY_BYTES:
        raise ValidationError("account_id is too long for a partition key; nothing was written")
    return account_id


def check_field(field_name: str, fields: Fields) -> list[FieldSpec]:
    """The unique fields that use attribute ``field_name``; ValidationError (nothing written) if none does."""
    using = [spec for spec in fields if field_name in parts_of(spec)]
    if not using:
        raise ValidationError(
            f"unknown unique field {field_name!r}; configured fields are: "
            f"{', '.join(attributes(fields))}; nothing was written. Add it to `fields` to protect it."
        )
    return using


__all__ = [
    "COMPOSITE_SEPARATOR",
    "DEFAULT_FIELDS",
    "FieldSpec",
    "Fields",
    "RESERVED_ATTRIBUTES",
    "account_key",
    "attributes",
    "check_account_id",
    "check_field",
    "check_fields",
    "check_key_length",
    "check_token",
    "condition_params",
    "equals_params",
    "field_value",
    "holds",
    "join_parts",
    "label",
    "marker_item",
    "marker_key",
    "namespace_for",
    "parts_of",
    "placeholder",
    "spec_of",
    "split_parts",
]
