"""UpdateTable: DynamoDB's billing-mode rules, against the table's current mode, and its rules for
GlobalSecondaryIndexUpdates (a new index's keys defined, a deleted or updated index existing),
checked before moto updates the table (API reference: UpdateTable). AttributeDefinitions given
for a new index are added to the table's (moto would replace them).

Global tables version 2019.11.21 (moto has none): ``ReplicaUpdates`` (Create, Delete, Update),
``MultiRegionConsistency`` and ``GlobalTableWitnessUpdates`` are answered here, by the store's
replication (:mod:`labkit.endpoint.store.replication`), with the rules the API reference and the
global tables pages state (quoted in ``tests/endpoint/test_global_tables.py``); decisions 180-185."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...shared.catalogue import DYNAMODB_TARGET, Op
from ..errors import ClientFault, invalid
from ..store.arns import table_of_arn
from ..store.changes import Change, Commit
from ..store.deliveries import DELIVERED, EVENTUAL, STRONG, Group, key_id
from ..store.restore import definition
from ..wire.decode import Request
from ..wire.encode import response
from . import Steps
from .create_table import check_billing, check_stream_request

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


#: The parameters that make or change a global table (answered here, never by moto).
GLOBAL = ("ReplicaUpdates", "MultiRegionConsistency", "GlobalTableWitnessUpdates")
#: "The witness must be in a different Region than the replicas and within the same Region set"
#: (API reference: CreateGlobalTableWitnessGroupMemberAction); an MRSC table's replicas too.
REGION_SETS: dict[str, frozenset[str]] = {
    "US": frozenset({"us-east-1", "us-east-2", "us-west-2"}),
    "EU": frozenset({"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"}),
    "AP": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-northeast-3"}),
}
#: DynamoDB's answer to a replica Create or Delete naming the region the request is sent to.
LOCAL_REGION = (
    "Cannot add or delete the local region through ReplicaUpdates. Use CreateTable, DeleteTable, or UpdateTable as "
    "required."
)
_ACTIONS = ("Create", "Update", "Delete", "Disassociate")


@functools.cache
def known_regions() -> frozenset[str]:
    """The regions botocore knows DynamoDB in (every partition)."""
    import botocore.session

    session = botocore.session.get_session()
    return frozenset(
        r for p in session.get_available_partitions() for r in session.get_available_regions("dynamodb", p)
    )


def _region(action: Mapping[str, Any], what: str) -> str:
    name = action.get("RegionName") if isinstance(action, Mapping) else None
    if not isinstance(name, str) or not name:
        raise invalid(f"One or more parameter values were invalid: {what} needs a RegionName")
    if name not in known_regions():
        raise invalid(f"One or more parameter values were invalid: {name!r} is not a Region DynamoDB is offered in")
    return name


def _global(store: MotoStore, request: Request) -> Response:
    """UpdateTable with ReplicaUpdates / MultiRegionConsistency / GlobalTableWitnessUpdates."""
    params = request.params
    account, region, table = request.account, request.region, str(params["TableName"])
    if table.startswith("arn:"):
        table = table_of_arn(Op.UPDATE_TABLE, table, account, region)
    if not store.replication.offered:
        raise invalid(
            "DynamoDB Local does not support global tables: ReplicaUpdates, MultiRegionConsistency and "
            "GlobalTableWitnessUpdates are refused by the dynamodb-local profile (decision 185)"
        )
    others = sorted(set(params) - {"TableName", *GLOBAL})
    if others:
        raise invalid(
            "labkit's embedded endpoint applies ReplicaUpdates in an UpdateTable of their own; send "
            f"{', '.join(others)} in another UpdateTable (decision 184)"
        )
    if store.schema(account, region, table) is None:
        raise ClientFault("ResourceNotFoundException", f"Requested resource not found: Table: {table} not found")
    replication = store.replication
    group = replication.group(account, region, table)
    creates: list[str] = []
    deletes: list[str] = []
    updates: list[str] = []
    for update in params.get("ReplicaUpdates") or ():
        named = [k for k in _ACTIONS if isinstance(update, Mapping) and update.get(k) is not None]
        if len(named) != 1:
            raise invalid(
                "One or more parameter values were invalid: each ReplicaUpdates entry takes exactly one of "
                "Create, Update, Delete"
            )
        kind = named[0]
        if kind == "Disassociate":
            raise invalid("labkit's embedded endpoint does not implement replica Disassociate (decision 184)")
        name = _region(update[kind], f"ReplicaUpdates {kind}")
        if kind in ("Create", "Delete") and name == region:
            raise invalid(LOCAL_REGION)
        if name in creates + deletes + updates:
            raise invalid(
                f"One or more parameter values were invalid: Region {name} appears more than once in ReplicaUpdates"
            )
        {"Create": creates, "Delete": deletes, "Update": updates}[kind].append(name)
    witnesses: list[str] = []
    for update in params.get("GlobalTableWitnessUpdates") or ():
        create = update.get("Create") if isinstance(update, Mapping) else None
        if create is None:
            raise invalid(
                "labkit's embedded endpoint adds a witness only with Create, when it creates an MRSC global "
                "table (decision 183)"
            )
        witnesses.append(_region(create, "GlobalTableWitnessUpdates Create"))
    consistency = params.get("MultiRegionConsistency")
    current = group.regions if group is not None else [region]
    if consistency is not None and (not creates or group is not None):
        # "This parameter is only valid when you create a global table by specifying one or more Create actions
        # in the ReplicaUpdates action list." (API reference: UpdateTable)
        raise invalid(
            "One or more parameter values were invalid: MultiRegionConsistency is only valid when you create a global "
            "table by specifying one or more Create actions in the ReplicaUpdates action list"
            + ("; a global table's consistency mode cannot be changed" if group is not None else "")
        )
    mode = str(consistency or (group.consistency if group is not None else EVENTUAL))
    if witnesses and mode != STRONG:
        raise invalid(
            "One or more parameter values were invalid: a witness Region is only for a global table with "
            "MultiRegionConsistency STRONG"
        )
    for name in updates + deletes:
        if name not in current:
            raise invalid(f"One or more parameter values were invalid: the table has no replica in Region {name}")
    for name in creates:
        if name in current:
            raise invalid(
                f"One or more parameter values were invalid: the table already has a replica in Region {name}"
            )
        if store.schema(account, name, table) is not None:
            raise invalid(
                f"One or more parameter values were invalid: Region {name} already has a table named "
                f"{table}; a new replica's table is made by DynamoDB"
            )
    if group is not None and group.consistency == STRONG and (creates or deletes):
        raise invalid(
            "labkit's embedded endpoint keeps an MRSC global table's Regions as created: it adds and "
            "removes no replica (decision 183)"
        )
    regions = [r for r in current if r not in deletes] + creates
    if mode == STRONG:
        _check_strong(store, account, region, table, regions, witnesses)
    for name in deletes:
        _delete_replica(store, account, name, table)
    for name in creates:
        _create_replica(store, account, region, name, table)
    if creates or deletes:
        replication.set_group(account, table, Group(regions, mode, witnesses[0] if witnesses else None))
    asked = {"TableName": table}
    headers = {k: v for k, v in request.headers.items() if k != "content-encoding"}
    headers["x-amz-target"] = f"{DYNAMODB_TARGET}.{Op.DESCRIBE_TABLE}"
    status, _, body = store.dispatch(
        dataclasses.replace(
            request, operation=Op.DESCRIBE_TABLE, params=asked, headers=headers, body=json.dumps(asked).encode()
        )
    )
    description = json.loads(body)["Table"] if status == 200 else {"TableName": table}
    replication.describe(account, region, table, description)
    return response(200, {"TableDescription": description})


def _create_replica(store: MotoStore, account: str, source: str, target: str, table: str) -> None:
    """Make ``table`` in ``target`` as it is in ``source`` (keys, indexes, billing, stream, TTL) and copy its
    items there, each with its stamp (a new replica starts as a copy, ACTIVE at once: decision 180)."""
    made = definition(store, account, source, table)
    ttl = made.pop("TimeToLive", None)
    made.pop("Tags", None)
    store.call(account, target, Op.CREATE_TABLE, made)
    if ttl:
        store.call(account, target, Op.UPDATE_TIME_TO_LIVE, {"TableName": table, "TimeToLiveSpecification": ttl})
    if store.durable is not None:
        store.durable.controlled(Op.CREATE_TABLE, account, target, 200)
    stamps = store.replication.stamps
    names = store.key_names(store.table_object(account, source, table))
    for item in store.all_items(account, source, table):
        key = {name: item[name] for name in names}
        store.insert(account, target, table, [item])
        kid = key_id(key)
        if (account, source, table, kid) in stamps:
            stamps[(account, target, table, kid)] = stamps[(account, source, table, kid)]
        store.commit(Commit(account, target, DELIVERED, (Change(table, key, None, item),)))


def _delete_replica(store: MotoStore, account: str, target: str, table: str) -> None:
    """Delete the replica's table in ``target`` (its items with it)."""
    if store.table_object(account, target, table) is not None:
        store.call(account, target, Op.DELETE_TABLE, {"TableName": table})
        if store.durable is not None:
            store.durable.controlled(Op.DELETE_TABLE, account, target, 200)


def _check_strong(
    store: MotoStore, account: str, region: str, table: str, regions: list[str], witnesses: list[str]
) -> None:
    """MRSC's documented rules: three replicas, or two and a witness; one Region set; an empty table."""
    if not ((len(regions) == 3 and not witnesses) or (len(regions) == 2 and len(witnesses) == 1)):
        # "A MRSC global table can be configured with either three replicas, or with two replicas and one
        # witness." (API reference: CreateGlobalTableWitnessGroupMemberAction)
        raise invalid(
            "One or more parameter values were invalid: A MRSC global table can be configured with either three "
            f"replicas, or with two replicas and one witness (asked: {len(regions)} replica(s), {len(witnesses)} "
            "witness(es))"
        )
    if witnesses and witnesses[0] in regions:
        raise invalid(
            "One or more parameter values were invalid: The witness must be in a different Region than the replicas"
        )
    every = set(regions) | set(witnesses)
    if not any(every <= members for members in REGION_SETS.values()):
        raise invalid(
            "One or more parameter values were invalid: MRSC replicas and witness must be within the same Region set "
            "(US: us-east-1, us-east-2, us-west-2; EU: eu-west-1, eu-west-2, eu-west-3, eu-central-1; AP: "
            f"ap-northeast-1, ap-northeast-2, ap-northeast-3); asked: {', '.join(sorted(every))}"
        )
    if store.all_items(account, region, table):
        raise invalid(
            "One or more parameter values were invalid: an MRSC global table is created from an empty table; this "
            "table holds items (decision 183)"
        )


def _stream_switched(store: MotoStore, request: Request) -> Any:
    """UpdateTable's StreamSpecification against the table's stream; moto's table if the request turns the
    table's stream on or off, else None.

    Developer Guide, "Change data capture for DynamoDB Streams": "You receive a ValidationException if you try
    to enable a stream on a table that already has a stream, or if you try to disable a stream on a table that
    doesn't have a stream", and "If you disable and then re-enable a stream on the table, a new stream is
    created with a different stream descriptor" (moto refuses any second stream: "Cannot enable stream")."""
    spec = request.params.get("StreamSpecification")
    check_stream_request(spec)
    if not isinstance(spec, Mapping) or spec.get("StreamEnabled") not in (True, False):
        return None
    name = str(request.params.get("TableName"))
    table = store.table_object(request.account, request.region, name)
    if table is None:
        return None  # moto answers ResourceNotFoundException
    enabled = bool((table.stream_specification or {}).get("StreamEnabled"))
    if spec["StreamEnabled"] and enabled:
        raise invalid(f"Table already has an enabled stream: TableName: {name}")
    if not spec["StreamEnabled"] and not enabled:
        raise invalid(f"Table has no stream to disable: TableName: {name}")
    return table


def _answer(store: MotoStore, request: Request) -> Response | None:
    table = _stream_switched(store, request)
    if table is None:
        return _answered(store, request)
    if request.params["StreamSpecification"]["StreamEnabled"]:
        return _new_stream(store, request, table)
    found = _applied(store, request)
    if not (table.stream_specification or {}).get("StreamEnabled"):
        # moto keeps a disabled stream's shard, whose next record then fails (KeyError 'StreamViewType': every
        # later write to the table answered with a 500): a disabled stream takes no more records, so it is let go
        table.stream_shard = None
    return found


def _new_stream(store: MotoStore, request: Request, table: Any) -> Response:
    """The request applied with moto's record of the last stream set aside, so that moto makes a new one (a new
    label, so a new LatestStreamArn); a request refused for another reason leaves the old one in place."""
    label, table.latest_stream_label = table.latest_stream_label, None
    try:
        found = _applied(store, request)
    except BaseException:
        table.latest_stream_label = label
        raise
    if found[0] != 200:
        table.latest_stream_label = label
    return found


def _applied(store: MotoStore, request: Request) -> Response:
    found = _answered(store, request)
    return found if found is not None else store.dispatch(request)


def _answered(store: MotoStore, request: Request) -> Response | None:
    if any(request.params.get(name) is not None for name in GLOBAL):
        return _global(store, request)
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
