"""Registering an account: a marker per unique value in the account's own transaction."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...shared import constants as C
from ...shared.capacity import item_size
from ...shared.codec import from_wire, to_wire
from ...shared.errors import (
    ItemTooLarge,
    ValidationError,
    ValueTaken,
)
from . import keys
from .keys import (
    DEFAULT_FIELDS,
    account_key,
    check_account_id,
    check_field,
    check_fields,
)
from .normalise import normalise_value
from .reasons import Slot, named_errors, transact

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Registration:
    """A prepared sign-up. Submitting the same object again resends the same id and token."""

    account_id: str
    values: Mapping[str, str]
    namespaces: Mapping[keys.FieldSpec, str]
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

    def markers(self) -> dict[str, str]:
        """Each unique field's name (``tenant+email`` for a composite) -> its marker value."""
        return {keys.label(spec): keys.field_value(spec, self.values) or "" for spec in self.namespaces}

    def marker_items(self) -> list[dict[str, Any]]:
        """One marker per unique field, owned by this account (a composite's records its parts)."""
        return [
            keys.marker_item(
                ns,
                keys.label(spec),
                keys.field_value(spec, self.values) or "",
                self.account_id,
                None if isinstance(spec, str) else {a: self.values[a] for a in spec},
            )
            for spec, ns in self.namespaces.items()
        ]

    def transact_items(self, table: str) -> list[dict[str, Any]]:
        """The account Put and a marker Put per value, each guarded by attribute_not_exists(PK)."""
        return [
            {
                "Put": {
                    "TableName": table,
                    "Item": to_wire(item),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            }
            for item in [self.account_item(), *self.marker_items()]
        ]

    def request(self, table: str) -> dict[str, Any]:
        """The complete TransactWriteItems request, token included."""
        return {"TransactItems": self.transact_items(table), "ClientRequestToken": self.token}

    def _slots(self) -> list[Slot]:
        pk = account_key(self.account_id)["PK"]
        return [Slot("create", f"account {pk}")] + [
            Slot("claim", f"{f} marker", f, v) for f, v in self.markers().items()
        ]


def prepare_registration(
    values: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    /,
    *,
    fields: keys.Fields = DEFAULT_FIELDS,
    attributes: Mapping[str, Any] | None = None,
    account_id: str | None = None,
    token: str | None = None,
    **named: str,
) -> Registration:
    """Validate and normalise a sign-up; fix its account id and token so a resend is identical.

    ``fields`` may hold composites: ``{("tenant", "email"): "TENANT_EMAIL"}`` makes the pair
    unique (one marker keyed by both normalised values); give each attribute by name.
    """
    fields = check_fields(fields)
    pairs = list(values.items() if isinstance(values, Mapping) else values) + list(named.items())
    given: dict[str, str] = {}
    for name, raw in pairs:
        check_field(name, fields)
        if name in given:
            raise ValidationError(f"field {name!r} given twice; give each unique field once")
        given[name] = raw
    names = keys.attributes(fields)
    missing = [f for f in names if f not in given]
    if missing:
        raise ValidationError(
            f"missing {', '.join(missing)}: a registration needs every unique field "
            f"({', '.join(names)}); nothing was written."
        )
    extra = dict(attributes or {})
    clash = sorted(set(extra) & (keys.RESERVED_ATTRIBUTES | set(names)))
    if clash:
        raise ValidationError(
            f"attributes may not set {', '.join(clash)}: keys, id and unique fields are set by "
            "labkit; nothing was written."
        )
    registration = Registration(
        account_id=check_account_id(account_id) if account_id is not None else uuid.uuid4().hex,
        values={f: normalise_value(f, given[f], keys.namespace_for(f, fields)) for f in names},
        namespaces=dict(fields),
        token=keys.check_token(token),
        attributes=extra,
    )
    for spec, ns in fields.items():
        keys.check_key_length(spec, ns, keys.field_value(spec, registration.values) or "")
    size = item_size(to_wire(registration.account_item()))
    if size > C.MAX_ITEM_BYTES:
        raise ItemTooLarge(size, C.MAX_ITEM_BYTES)
    return registration


def taken_values(client: DynamoDBClient, table: str, registration: Registration) -> dict[str, str]:
    """Which of the registration's unique fields already have a marker (one consistent BatchGet)."""
    markers = registration.markers()
    field_of = {
        keys.marker_key(ns, markers[keys.label(spec)])["PK"]: keys.label(spec)
        for spec, ns in registration.namespaces.items()
    }
    request: dict[str, Any] = {
        table: {
            "Keys": [to_wire({"PK": pk, "SK": C.MARKER_SK}) for pk in field_of],
            "ConsistentRead": True,
        }
    }
    found: list[dict[str, Any]] = []
    with named_errors("checking which values are taken", table):
        while request:
            out = client.batch_get_item(RequestItems=request)
            found += out.get("Responses", {}).get(table, [])
            request = dict(out.get("UnprocessedKeys") or {})
    taken = {field_of[from_wire(item)["PK"]] for item in found}
    return {f: v for f, v in markers.items() if f in taken}


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
    transact(
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
    fields: keys.Fields = DEFAULT_FIELDS,
    attributes: Mapping[str, Any] | None = None,
    account_id: str | None = None,
    token: str | None = None,
    check_first: bool = False,
    **named: str,
) -> Registration:
    """Register an account and a marker per unique value in one guarded transaction.

    ``register(client, table, email="ada@lovelace.io", username="ada")``. Safe to retry: after a
    lost response (:class:`~labkit.shared.errors.OutcomeUnknown`), resend with the same ``account_id``
    and ``token`` (or :func:`submit` the same :class:`Registration`) — DynamoDB applies it once.
    """
    registration = prepare_registration(
        values, fields=fields, attributes=attributes, account_id=account_id, token=token, **named
    )
    return submit(client, table, registration, check_first=check_first)


__all__ = ["Registration", "prepare_registration", "register", "submit", "taken_values"]
