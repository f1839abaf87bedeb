"""UpdateTable: DynamoDB's billing-mode rules, against the table's current mode, and its rules for
GlobalSecondaryIndexUpdates (a new index's keys defined, a deleted or updated index existing),
checked before moto updates the table (API reference: UpdateTable). AttributeDefinitions given
for a new index are added to the table's (moto would replace them)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ClientFault, invalid
from ..wire.decode import Request
from . import Steps
from .create_table import check_billing

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def _check_update(params: Mapping[str, Any], current: tuple[float, float] | None) -> None:
    """UpdateTable's billing-mode rules; ``current``: the table's (RCU, WCU) if it is PROVISIONED, else None."""
    mode = params.get("BillingMode") or ("PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    throughput = params.get("ProvisionedThroughput")
    if mode == "PROVISIONED" and current is None and throughput is None:
        raise invalid(
            "One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is "
            "PROVISIONED"
        )
    check_billing(str(mode), throughput, "PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    if mode == "PROVISIONED" and current is not None and throughput is not None:
        read, write = throughput.get("ReadCapacityUnits"), throughput.get("WriteCapacityUnits")
        if (read, write) == (int(current[0]), int(current[1])):
            raise invalid(
                "The provisioned throughput for the table will not change. The requested value equals the current "
                f"value. Current ReadCapacityUnits provisioned for the table: {read}. Requested ReadCapacityUnits: "
                f"{read}. Current WriteCapacityUnits provisioned for the table: {write}. Requested "
                f"WriteCapacityUnits: {write}. Refer to the Amazon DynamoDB Developer Guide for current limits and "
                "how to request higher limits."
            )


def _check_index_updates(params: Mapping[str, Any], defined: list[str], global_indexes: set[str]) -> None:
    """GlobalSecondaryIndexUpdates against the table: a new index's keys must be defined (in the
    request's AttributeDefinitions or the table's), an index deleted or updated must exist."""
    given = [str(a.get("AttributeName")) for a in params.get("AttributeDefinitions") or ()]
    known = given + [name for name in defined if name not in given]
    for update in params.get("GlobalSecondaryIndexUpdates") or ():
        create = update.get("Create")
        if create is not None:
            keys = [str(k.get("AttributeName")) for k in create.get("KeySchema") or ()]
            if any(key not in known for key in keys):
                raise invalid(
                    "One or more parameter values were invalid: Some index key attributes are not defined in "
                    f"AttributeDefinitions. Keys: [{', '.join(keys)}], AttributeDefinitions: [{', '.join(given)}]"
                )
        for kind in ("Delete", "Update"):
            named = update.get(kind)
            if named is not None and named.get("IndexName") not in global_indexes:
                raise ClientFault("ResourceNotFoundException", "Requested resource not found")


def _answer(store: MotoStore, request: Request) -> Response | None:
    account, region, table = request.account, request.region, request.params["TableName"]
    found = store.capacity(account, region, table)
    if found is not None:
        _check_update(request.params, found[1])
    schema = store.schema(account, region, table)
    if schema is None:
        return None
    defined = store.attribute_names(account, region, table) or []
    _check_index_updates(request.params, defined, {i.name for i in schema.indexes if not i.local})
    given = request.params.get("AttributeDefinitions")
    if not given:
        return None
    # moto replaces the table's AttributeDefinitions with the request's (DynamoDB adds them): keep the
    # table's own definitions, then the new ones, and let moto apply that request.
    merged = list(store.attribute_definitions(account, region, table) or [])
    names = {a["AttributeName"] for a in merged}
    merged += [a for a in given if a.get("AttributeName") not in names]
    params = {**request.params, "AttributeDefinitions": merged}
    body = json.dumps(params).encode("utf-8")
    headers = {k: v for k, v in request.headers.items() if k != "content-encoding"}
    return store.dispatch(dataclasses.replace(request, params=params, body=body, headers=headers))


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
