"""Regions and global tables (issue 38, items 1, 2 and 5): one embedded endpoint serves every region
(a request's region is its SigV4 credential scope, a boto3 client's ``region_name``); a table becomes
global by ``UpdateTable`` with ``ReplicaUpdates`` (version 2019.11.21).

The rules, quoted from DynamoDB's developer guide ("How DynamoDB global tables work") and API reference:

* MREC: "Changes to items in an MREC global table replica are asynchronously replicated to all other
  replicas"; "If the same item is modified in multiple Regions simultaneously, DynamoDB will resolve the
  conflict by using the modification with the latest internal timestamp on a per-item basis, referred to
  as a 'last writer wins' conflict resolution method"; "strongly consistent read operations return the
  latest version of an item if the item was last updated in the Region where the read occurred but might
  return stale data if the item was last updated in a different Region. Conditional writes evaluate the
  condition expression against the version of the item in the Region."
* AWS Prescriptive Guidance ("Key facts about MREC"): "Items are replicated individually. Items that are
  updated within a single transaction might not be replicated together."
* MRSC: "A MRSC global table can be configured with either three replicas, or with two replicas and one
  witness"; "The witness must be in a different Region than the replicas and within the same Region set"
  (API reference: CreateGlobalTableWitnessGroupMemberAction); ReplicatedWriteConflictException: "The
  request was rejected because one or more items in the request are being modified by a request in
  another Region."
* UpdateTable's MultiRegionConsistency: "This parameter is only valid when you create a global table by
  specifying one or more Create actions in the ReplicaUpdates action list."; the guide: "You cannot change
  a global table's consistency mode after creation."

Replication is explicit in the lab: each write becomes pending deliveries (``Labkit.ListReplications``),
made by ``Labkit.DeliverReplications`` or, by default, at the first request once the engine's clock
passes the write time plus the lag (decision 182).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from hypothesis import given
from hypothesis import strategies as st

from labkit.embedded import DYNAMODB_LOCAL, regions_line, start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.endpoint.store.durable import LOG, read_records
from labkit.engine_plugins.faults import deliver_replications, replications, set_replication_lag
from labkit.shared.backend import Connection
from labkit.shared.catalogue import DYNAMODB_TARGET, Op
from labkit.shared.constants import REPLICATIONS_HEADER
from tests.endpoint.clients import post, refused
from tests.endpoint.fake_clock import FakeClock
from tests.endpoint.fuzz_settings import FUZZ
from tests.endpoint.tables import make_table

EAST, WEST, OHIO, IRELAND = "us-east-1", "us-west-2", "us-east-2", "eu-west-1"


def raw_client(url: str, region: str) -> Any:
    """A plain boto3 client of ``url`` in ``region`` (its credential scope), as team code makes one: no
    client-side validation (the endpoint's answers are checked) and no retries."""
    return boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name=region,
        aws_access_key_id="labkit",
        aws_secret_access_key="labkit",
        config=Config(parameter_validation=False, retries={"mode": "standard", "total_max_attempts": 1}),
    )


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def endpoint(clock: FakeClock) -> Iterator[EmbeddedEndpoint]:
    with start_endpoint(clock=clock) as ep:
        yield ep


@pytest.fixture(scope="module")
def east(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url, EAST)


@pytest.fixture(scope="module")
def west(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url, WEST)


@pytest.fixture(scope="module")
def ohio(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url, OHIO)


@pytest.fixture(autouse=True)
def nothing_pending(endpoint: EmbeddedEndpoint) -> Iterator[None]:
    """Each test starts and ends with no delivery pending and the default lag."""
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    control(endpoint, Op.SET_REPLICATION_LAG, {"Seconds": 1.0})
    yield
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})


def control(endpoint: EmbeddedEndpoint, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    status, payload = post(endpoint.url, operation, json.dumps(params).encode())
    assert status == 200, payload
    return payload


def pending(endpoint: EmbeddedEndpoint) -> list[dict[str, Any]]:
    return list(control(endpoint, Op.LIST_REPLICATIONS, {})["Pending"])


def deliver(endpoint: EmbeddedEndpoint, *ids: int) -> list[str]:
    return [d["Outcome"] for d in control(endpoint, Op.DELIVER_REPLICATIONS, {"Ids": list(ids)})["Delivered"]]


def global_table(client: Any, *regions: str, **kwargs: Any) -> str:
    """A fresh table (PK S, SK S) in ``client``'s region, with a replica in each of ``regions``."""
    name = make_table(client)
    client.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": r}} for r in regions], **kwargs)
    return name


def item(pk: str, **values: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "A"}, **{k: {"S": v} for k, v in values.items()}}


def read(client: Any, table: str, pk: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get_item(
        TableName=table, Key={"PK": {"S": pk}, "SK": {"S": "A"}}, ConsistentRead=True
    ).get("Item")
    return found


# --- regions --------------------------------------------------------------------------------------
def test_regions__one_table_name_in_two_regions__two_independent_tables(east: Any, west: Any) -> None:
    """A request's region is its credential scope: the same name in two regions is two tables."""
    name = make_table(east)
    make_table(west, name=name)
    east.put_item(TableName=name, Item=item("x", region="east"))
    west.put_item(TableName=name, Item=item("x", region="west"))
    assert read(east, name, "x") == item("x", region="east")
    assert read(west, name, "x") == item("x", region="west")


# --- making a global table ------------------------------------------------------------------------
def test_replica_create__new_region__a_copy_with_its_items_described_as_global(east: Any, west: Any) -> None:
    """UpdateTable ReplicaUpdates Create makes the table in the new region, items included; DescribeTable
    then says GlobalTableVersion 2019.11.21 and lists the replica ACTIVE."""
    name = make_table(east)
    east.put_item(TableName=name, Item=item("before", v="1"))
    answer = east.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
    described = answer["TableDescription"]
    assert described["GlobalTableVersion"] == "2019.11.21"
    assert [(r["RegionName"], r["ReplicaStatus"]) for r in described["Replicas"]] == [(WEST, "ACTIVE")]
    assert described["MultiRegionConsistency"] == "EVENTUAL"
    assert read(west, name, "before") == item("before", v="1")
    there = west.describe_table(TableName=name)["Table"]
    assert [r["RegionName"] for r in there["Replicas"]] == [EAST]


def test_regional_table__describe__no_replicas_no_global_table_version(east: Any) -> None:
    """A table that is not global has neither Replicas nor GlobalTableVersion."""
    described = east.describe_table(TableName=make_table(east))["Table"]
    assert "Replicas" not in described and "GlobalTableVersion" not in described


def test_replica_create__the_local_region__refused_in_dynamodbs_words(east: Any) -> None:
    """DynamoDB answers a Create of the region the request is sent to with this ValidationException."""
    name = make_table(east)
    code, message = refused(east.update_table, TableName=name, ReplicaUpdates=[{"Create": {"RegionName": EAST}}])
    assert (code, message) == (
        "ValidationException",
        "Cannot add or delete the local region through ReplicaUpdates. Use CreateTable, DeleteTable, or UpdateTable "
        "as required.",
    )


@pytest.mark.parametrize(
    ("updates", "words"),
    [
        ([{"Create": {"RegionName": "moon-west-1"}}], "is not a Region"),
        ([{"Delete": {"RegionName": WEST}}], "no replica in Region us-west-2"),
        ([{"Create": {"RegionName": WEST}}, {"Create": {"RegionName": WEST}}], "more than once"),
        ([{"Create": {"RegionName": WEST}, "Delete": {"RegionName": OHIO}}], "exactly one of"),
    ],
)
def test_replica_updates__bad_input__validation_exception_and_nothing_made(
    east: Any, west: Any, updates: list[dict[str, Any]], words: str
) -> None:
    """A ReplicaUpdates list DynamoDB cannot apply is a ValidationException; no replica is made."""
    name = make_table(east)
    code, message = refused(east.update_table, TableName=name, ReplicaUpdates=updates)
    assert code == "ValidationException" and words in message
    assert name not in west.list_tables()["TableNames"]
    assert "Replicas" not in east.describe_table(TableName=name)["Table"]


def test_replica_create__region_already_a_replica__validation_exception(east: Any) -> None:
    """A replica is made once per region ("Each global table can have only one replica per AWS Region")."""
    name = global_table(east, WEST)
    code, message = refused(east.update_table, TableName=name, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
    assert code == "ValidationException" and "already has a replica in Region us-west-2" in message


def test_replica_updates__missing_table__resource_not_found(east: Any) -> None:
    """UpdateTable of a table the region does not hold: ResourceNotFoundException."""
    code, _ = refused(
        east.update_table, TableName="labkit-no-such-table", ReplicaUpdates=[{"Create": {"RegionName": WEST}}]
    )
    assert code == "ResourceNotFoundException"


def test_multi_region_consistency__without_a_create__validation_exception(east: Any) -> None:
    """ "This parameter is only valid when you create a global table by specifying one or more Create actions
    in the ReplicaUpdates action list." """
    name = make_table(east)
    code, message = refused(east.update_table, TableName=name, MultiRegionConsistency="EVENTUAL")
    assert code == "ValidationException" and "only valid when you create a global table" in message


def test_multi_region_consistency__of_a_global_table__cannot_change(east: Any) -> None:
    """ "You cannot change a global table's consistency mode after creation." """
    name = global_table(east, WEST)
    code, message = refused(
        east.update_table,
        TableName=name,
        ReplicaUpdates=[{"Create": {"RegionName": OHIO}}],
        MultiRegionConsistency="STRONG",
    )
    assert code == "ValidationException" and "consistency mode cannot be changed" in message


def test_replica_delete__last_other_replica__table_regional_again_pending_dropped(
    endpoint: EmbeddedEndpoint, east: Any, west: Any
) -> None:
    """ReplicaUpdates Delete removes the replica's table; alone again, the table is regional, and the
    deliveries bound for the deleted replica are dropped."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a"))
    assert [d["To"] for d in pending(endpoint)] == [WEST]
    east.update_table(TableName=name, ReplicaUpdates=[{"Delete": {"RegionName": WEST}}])
    assert name not in west.list_tables()["TableNames"]
    assert "Replicas" not in east.describe_table(TableName=name)["Table"]
    assert pending(endpoint) == []


def test_replica_create__table_named_by_its_arn__same_as_by_name(east: Any, west: Any) -> None:
    """UpdateTable's TableName may be the table's ARN: the replica is made all the same."""
    name = make_table(east)
    arn = east.describe_table(TableName=name)["Table"]["TableArn"]
    east.update_table(TableName=arn, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
    assert [r["RegionName"] for r in west.describe_table(TableName=name)["Table"]["Replicas"]] == [EAST]


def test_delete_table__of_a_replica__leaves_the_global_table(east: Any, west: Any, ohio: Any) -> None:
    """ "You can delete a global table's replica table the same way you delete a regular table": the
    others no longer list it."""
    name = global_table(east, WEST, OHIO)
    ohio.delete_table(TableName=name)
    assert [r["RegionName"] for r in east.describe_table(TableName=name)["Table"]["Replicas"]] == [WEST]


# --- MREC -----------------------------------------------------------------------------------------
def test_mrec_write__applied_in_its_region__replicated_later(endpoint: EmbeddedEndpoint, east: Any, west: Any) -> None:
    """ "asynchronously replicated to all other replicas": the other region sees the write once delivered."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a", v="1"))
    assert read(east, name, "a") == item("a", v="1")
    assert read(west, name, "a") is None  # a strongly consistent read in the other region: stale
    (delivery,) = pending(endpoint)
    assert (delivery["From"], delivery["To"], delivery["Key"]) == (EAST, WEST, {"PK": {"S": "a"}, "SK": {"S": "A"}})
    assert deliver(endpoint, delivery["Id"]) == ["applied"]
    assert read(west, name, "a") == item("a", v="1")


def test_mrec_replica__query_and_scan__find_copied_and_delivered_items(
    endpoint: EmbeddedEndpoint, east: Any, west: Any
) -> None:
    """A replica is a table like any other: Query and Scan there find the items it was made with and the
    ones delivered since, and a delivered delete leaves them."""
    name = make_table(east)
    east.put_item(TableName=name, Item=item("a", v="copied"))
    east.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
    east.put_item(TableName=name, Item=item("b", v="delivered"))
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    query = {"TableName": name, "KeyConditionExpression": "PK = :p"}
    assert west.query(**query, ExpressionAttributeValues={":p": {"S": "b"}})["Items"] == [item("b", v="delivered")]
    assert west.scan(TableName=name)["Count"] == 2
    west.delete_item(TableName=name, Key={"PK": {"S": "a"}, "SK": {"S": "A"}})
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    assert east.query(**query, ExpressionAttributeValues={":p": {"S": "a"}})["Items"] == []
    assert east.scan(TableName=name)["Count"] == 1


def test_mrec_write__its_answer_names_the_deliveries_it_made(endpoint: EmbeddedEndpoint, east: Any) -> None:
    """The answer of a write carries ``X-Labkit-Replications``: the ids of the deliveries it made (the race lab
    names a delivery after its call); a read's answer carries none."""
    name = global_table(east, WEST, OHIO)
    answer = east.transact_write_items(
        TransactItems=[{"Put": {"TableName": name, "Item": item(pk)}} for pk in ("user", "marker")]
    )
    named = answer["ResponseMetadata"]["HTTPHeaders"][REPLICATIONS_HEADER.lower()]
    assert named == ",".join(str(d["Id"]) for d in pending(endpoint))
    read_answer = east.get_item(TableName=name, Key={"PK": {"S": "user"}, "SK": {"S": "A"}})
    assert REPLICATIONS_HEADER.lower() not in read_answer["ResponseMetadata"]["HTTPHeaders"]


def test_mrec_conflict__two_regions_one_item__last_writer_wins_everywhere(
    endpoint: EmbeddedEndpoint, clock: FakeClock, east: Any, west: Any
) -> None:
    """ "last writer wins" by write time: delivered in either order, both replicas end with the later write."""
    name = global_table(east, WEST)
    control(endpoint, Op.SET_REPLICATION_LAG, {"Seconds": None})
    west.put_item(TableName=name, Item=item("a", by="west"))
    clock.now += 0.5
    east.put_item(TableName=name, Item=item("a", by="east"))
    later, earlier = sorted(pending(endpoint), key=lambda d: -d["WriteTime"])
    assert deliver(endpoint, later["Id"], earlier["Id"]) == ["applied", "superseded"]
    assert read(east, name, "a") == read(west, name, "a") == item("a", by="east")


def test_mrec_conflict__same_instant__the_later_commit_wins(endpoint: EmbeddedEndpoint, east: Any, west: Any) -> None:
    """A frozen lab clock stamps both writes alike: the one the engine applied later wins (decision 181)."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a", by="east"))
    west.put_item(TableName=name, Item=item("a", by="west"))
    first, second = pending(endpoint)
    assert first["WriteTime"] == second["WriteTime"]
    assert deliver(endpoint, second["Id"], first["Id"]) == ["applied", "superseded"]
    assert read(east, name, "a") == read(west, name, "a") == item("a", by="west")


def test_mrec_condition__checked_against_the_local_replica__both_guarded_updates_succeed(
    endpoint: EmbeddedEndpoint, east: Any, west: Any
) -> None:
    """ "Conditional writes evaluate the condition expression against the version of the item in the
    Region": two version-guarded updates in two regions both pass, and one change is lost."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item={**item("settings", flag="off"), "version": {"N": "1"}})
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    for client, flag in ((east, "east"), (west, "west")):
        client.update_item(
            TableName=name,
            Key={"PK": {"S": "settings"}, "SK": {"S": "A"}},
            UpdateExpression="SET flag = :f, version = :next",
            ConditionExpression="version = :seen",
            ExpressionAttributeValues={":f": {"S": flag}, ":seen": {"N": "1"}, ":next": {"N": "2"}},
        )
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    settled = read(east, name, "settings")
    assert settled == read(west, name, "settings")
    assert settled is not None and settled["flag"] == {"S": "west"}  # east's change is lost


def test_mrec_transaction__items_replicate_separately(endpoint: EmbeddedEndpoint, east: Any, west: Any) -> None:
    """ "Items that are updated within a single transaction might not be replicated together": a
    transaction's two items are two deliveries; one can arrive without the other."""
    name = global_table(east, WEST)
    east.transact_write_items(
        TransactItems=[{"Put": {"TableName": name, "Item": item(pk)}} for pk in ("user", "marker")]
    )
    user, marker = pending(endpoint)
    assert deliver(endpoint, marker["Id"]) == ["applied"]
    assert read(west, name, "marker") == item("marker") and read(west, name, "user") is None


def test_mrec_batch_partiql_and_ttl_writes__each_item_a_delivery(
    endpoint: EmbeddedEndpoint, clock: FakeClock, east: Any
) -> None:
    """Every write of an item replicates, whatever made it: a BatchWriteItem's items, a PartiQL INSERT, and
    the TTL process's deletions (each one delivery per other replica)."""
    name = global_table(east, WEST)
    east.update_time_to_live(TableName=name, TimeToLiveSpecification={"AttributeName": "ttl", "Enabled": True})
    east.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": item(pk)}} for pk in ("b1", "b2")]})
    east.execute_statement(Statement=f"INSERT INTO \"{name}\" VALUE {{'PK': 'p', 'SK': 'A'}}")
    assert [(d["Operation"], d["Key"]["PK"]["S"], d["To"]) for d in pending(endpoint)] == [
        (Op.BATCH_WRITE_ITEM, "b1", WEST),
        (Op.BATCH_WRITE_ITEM, "b2", WEST),
        (Op.PUT_ITEM, "p", WEST),  # the statement runs as the request it stands for
    ]
    epoch = control(endpoint, Op.LIST_REPLICATIONS, {})["Now"]
    east.put_item(TableName=name, Item={**item("old"), "ttl": {"N": str(int(epoch) - 60)}})
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    control(endpoint, Op.EXPIRE_ITEMS, {"TableName": name})
    assert [(d["Operation"], d["Key"]["PK"]["S"], d["Deletes"]) for d in pending(endpoint)] == [
        (Op.EXPIRE_ITEMS, "old", True)
    ]


def test_mrec_delete__replicates__an_older_put_does_not_bring_the_item_back(
    endpoint: EmbeddedEndpoint, east: Any, west: Any
) -> None:
    """A delete is a write like any other: delivered after it, an earlier put is superseded."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a"))
    control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})
    west.put_item(TableName=name, Item=item("a", v="old"))
    east.delete_item(TableName=name, Key={"PK": {"S": "a"}, "SK": {"S": "A"}})
    put, delete = pending(endpoint)
    assert delete["Deletes"] is True
    assert deliver(endpoint, delete["Id"], put["Id"]) == ["applied", "superseded"]
    assert read(east, name, "a") is None and read(west, name, "a") is None


def test_default_policy__clock_past_write_time_plus_lag__delivered_at_the_next_request(
    endpoint: EmbeddedEndpoint, clock: FakeClock, east: Any, west: Any
) -> None:
    """Nothing moves until the lab's clock does: past the lag, the next request finds the write delivered."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a"))
    clock.now += 0.9
    assert read(west, name, "a") is None
    clock.now += 0.2
    assert read(west, name, "a") == item("a")
    assert pending(endpoint) == []


def test_replication_lag__zero__every_later_request_sees_the_write_delivered(
    endpoint: EmbeddedEndpoint, east: Any, west: Any
) -> None:
    """Lag 0 makes replication synchronous for every observer: the next request in any region finds the
    write delivered, so two version-guarded updates in two regions no longer both pass."""
    name = global_table(east, WEST)
    control(endpoint, Op.SET_REPLICATION_LAG, {"Seconds": 0})
    east.put_item(TableName=name, Item={**item("settings"), "version": {"N": "1"}})
    guarded = {
        "TableName": name,
        "Key": {"PK": {"S": "settings"}, "SK": {"S": "A"}},
        "UpdateExpression": "SET version = :next",
        "ConditionExpression": "version = :seen",
        "ExpressionAttributeValues": {":seen": {"N": "1"}, ":next": {"N": "2"}},
    }
    east.update_item(**guarded)
    code, _ = refused(west.update_item, **guarded)
    assert code == "ConditionalCheckFailedException"


def test_replication_lag__null__only_deliver_replications_delivers(
    endpoint: EmbeddedEndpoint, clock: FakeClock, east: Any, west: Any
) -> None:
    """Labkit.SetReplicationLag null: however far the clock moves, a delivery waits to be asked for."""
    name = global_table(east, WEST)
    assert control(endpoint, Op.SET_REPLICATION_LAG, {"Seconds": None})["Previous"] == 1.0
    east.put_item(TableName=name, Item=item("a"))
    clock.now += 3600
    assert read(west, name, "a") is None
    assert [d["Due"] for d in pending(endpoint)] == [None]


@pytest.mark.parametrize(
    ("operation", "params"),
    [
        (Op.DELIVER_REPLICATIONS, {"Ids": [999999]}),
        (Op.DELIVER_REPLICATIONS, {"Ids": "twice"}),
        (Op.DELIVER_REPLICATIONS, {}),
        (Op.DELIVER_REPLICATIONS, {"Ids": "1"}),
        (Op.DELIVER_REPLICATIONS, {"All": False}),
        (Op.SET_REPLICATION_LAG, {"Seconds": -1}),
        (Op.SET_REPLICATION_LAG, {}),
        (Op.LIST_REPLICATIONS, {"TableName": "x"}),
    ],
)
def test_replication_controls__bad_input__400_nothing_delivered(
    endpoint: EmbeddedEndpoint, east: Any, operation: str, params: dict[str, Any]
) -> None:
    """A control request it cannot follow is a 400 naming what it takes; the pending deliveries stay."""
    name = global_table(east, WEST)
    east.put_item(TableName=name, Item=item("a"))
    before = pending(endpoint)
    if params == {"Ids": "twice"}:  # the pending delivery, named twice
        params = {"Ids": [before[0]["Id"], before[0]["Id"]]}
    status, payload = post(endpoint.url, operation, json.dumps(params).encode())
    assert status == 400 and payload["__type"].endswith("ValidationException"), payload
    assert pending(endpoint) == before


# --- MRSC -----------------------------------------------------------------------------------------
def test_mrsc__three_replicas__a_write_is_read_back_in_every_region(
    endpoint: EmbeddedEndpoint, east: Any, west: Any, ohio: Any
) -> None:
    """MRSC: "the ability to perform a strongly consistent read with multi-Region scope"."""
    name = global_table(east, WEST, OHIO, MultiRegionConsistency="STRONG")
    assert east.describe_table(TableName=name)["Table"]["MultiRegionConsistency"] == "STRONG"
    west.put_item(TableName=name, Item=item("a", v="1"))
    assert read(east, name, "a") == read(ohio, name, "a") == item("a", v="1")


def test_mrsc__two_replicas_and_a_witness__accepted(east: Any) -> None:
    """ "A MRSC global table can be configured with either three replicas, or with two replicas and one witness." """
    name = make_table(east)
    answer = east.update_table(
        TableName=name,
        ReplicaUpdates=[{"Create": {"RegionName": OHIO}}],
        GlobalTableWitnessUpdates=[{"Create": {"RegionName": WEST}}],
        MultiRegionConsistency="STRONG",
    )["TableDescription"]
    assert answer["GlobalTableWitnesses"] == [{"RegionName": WEST, "WitnessStatus": "ACTIVE"}]


@pytest.mark.parametrize(
    ("regions", "words"),
    [
        ([WEST], "either three replicas, or with two replicas and one witness"),
        ([WEST, OHIO, "eu-west-1"], "either three replicas"),
        ([WEST, IRELAND], "within the same Region set"),
    ],
)
def test_mrsc__documented_restrictions__validation_exception_nothing_made(
    east: Any, regions: list[str], words: str
) -> None:
    """MRSC's Regions: three (or two and a witness), all in one Region set; anything else is refused."""
    name = make_table(east)
    code, message = refused(
        east.update_table,
        TableName=name,
        ReplicaUpdates=[{"Create": {"RegionName": r}} for r in regions],
        MultiRegionConsistency="STRONG",
    )
    assert code == "ValidationException" and words in message
    assert "Replicas" not in east.describe_table(TableName=name)["Table"]


def test_mrsc__a_table_with_items__refused(east: Any) -> None:
    """An MRSC global table is made from an empty table (AWS's MRSC example: "Table must be empty when
    enabling MRSC")."""
    name = make_table(east)
    east.put_item(TableName=name, Item=item("a"))
    code, message = refused(
        east.update_table,
        TableName=name,
        ReplicaUpdates=[{"Create": {"RegionName": r}} for r in (WEST, OHIO)],
        MultiRegionConsistency="STRONG",
    )
    assert code == "ValidationException" and "empty table" in message


def test_mrsc__write_from_another_region_while_one_is_in_flight__replicated_write_conflict(
    endpoint: EmbeddedEndpoint, east: Any, west: Any, ohio: Any
) -> None:
    """ReplicatedWriteConflictException: "one or more items in the request are being modified by a request in
    another Region" — nothing written; once the first write's replication is delivered, the write goes through."""
    name = global_table(east, WEST, OHIO, MultiRegionConsistency="STRONG")
    east.put_item(TableName=name, Item=item("a", by="east"))
    code, message = refused(west.put_item, TableName=name, Item=item("a", by="west"))
    assert code == "ReplicatedWriteConflictException"
    assert message == (
        "The request was rejected because one or more items in the request are being modified by a request in "
        "another Region."
    )
    assert read(west, name, "a") == item("a", by="east")
    outcomes = control(endpoint, Op.DELIVER_REPLICATIONS, {"All": True})["Delivered"]
    assert {d["Outcome"] for d in outcomes} == {"acknowledged"}
    west.put_item(TableName=name, Item=item("a", by="west"))
    assert read(east, name, "a") == item("a", by="west")


# --- the dynamodb-local profile ---------------------------------------------------------------------
def test_dynamodb_local_profile__replica_updates__refused_nothing_made() -> None:
    """DynamoDB Local implements no global tables: the profile refuses ReplicaUpdates (decision 185)."""
    with start_endpoint(profile=DYNAMODB_LOCAL) as ep:
        east, west = raw_client(ep.url, EAST), raw_client(ep.url, WEST)
        name = make_table(east)
        code, message = refused(east.update_table, TableName=name, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
        assert code == "ValidationException" and "DynamoDB Local does not support global tables" in message
        assert west.list_tables()["TableNames"] == []


# --- the data directory -----------------------------------------------------------------------------
def test_data_directory__restart__replicas_and_pending_deliveries_kept(tmp_path: Any) -> None:
    """``--data`` keeps a global table's replicas and the deliveries not yet made: after a restart the
    delivery is still pending, and delivering it applies it (binary keys and values included)."""
    data = tmp_path / "data"
    with start_endpoint(data=data) as ep:
        east = raw_client(ep.url, EAST)
        control(ep, Op.SET_REPLICATION_LAG, {"Seconds": None})
        name = make_table(east, keys=[("id", "B")])
        east.update_table(TableName=name, ReplicaUpdates=[{"Create": {"RegionName": WEST}}])
        east.put_item(TableName=name, Item={"id": {"B": b"\x00\x01"}, "blob": {"B": b"\xff"}})
        before = pending(ep)
    with start_endpoint(data=data) as ep:
        east, west = raw_client(ep.url, EAST), raw_client(ep.url, WEST)
        assert [r["RegionName"] for r in east.describe_table(TableName=name)["Table"]["Replicas"]] == [WEST]
        after = pending(ep)
        assert [(d["Id"], d["From"], d["To"], d["Key"]) for d in after] == [
            (d["Id"], d["From"], d["To"], d["Key"]) for d in before
        ]
        assert west.get_item(TableName=name, Key={"id": {"B": b"\x00\x01"}}).get("Item") is None
        assert deliver(ep, after[0]["Id"]) == ["applied"]
        assert west.get_item(TableName=name, Key={"id": {"B": b"\x00\x01"}})["Item"]["blob"] == {"B": b"\xff"}
    with start_endpoint(data=data) as ep:
        west = raw_client(ep.url, WEST)
        assert pending(ep) == []
        assert west.get_item(TableName=name, Key={"id": {"B": b"\x00\x01"}})["Item"]["blob"] == {"B": b"\xff"}


def test_regions_line__after_a_restart__names_the_regions_and_what_is_pending(tmp_path: Any) -> None:
    """`labkit serve`'s banner line: the regions holding tables, the global tables, the deliveries pending."""
    data = tmp_path / "data"
    with start_endpoint(data=data) as ep:
        east = raw_client(ep.url, EAST)
        name = global_table(east, WEST)
        east.put_item(TableName=name, Item=item("a"))
    with start_endpoint(data=data) as ep:
        line = regions_line(ep.engine)
    assert "tables in: us-east-1 (1), us-west-2 (1)" in line
    assert "global tables: 1, deliveries pending: 1 (made 1 s after each write;" in line


def test_data_directory__a_write_and_its_deliveries__one_record(tmp_path: Any) -> None:
    """A write of a global table's item is kept with its deliveries in one log record, fsync-ed before the
    answer: a crash keeps both or neither (never a write that is not replicated after a restart)."""
    data = tmp_path / "data"
    with start_endpoint(data=data) as ep:
        east = raw_client(ep.url, EAST)
        name = global_table(east, WEST, OHIO)
        east.put_item(TableName=name, Item=item("a"))
    records, torn = read_records(data / LOG, torn_tail_ok=True)
    last = records[-1]
    assert torn is None and last["t"] == "items"
    assert [(c[0], c[2]["PK"]) for c in last["c"]] == [(name, {"S": "a"})]
    assert [(d["from"], d["to"], d["k"]["PK"]) for d in last["rep"]["d"]] == [
        (EAST, WEST, {"S": "a"}),
        (EAST, OHIO, {"S": "a"}),
    ]


def test_python_helpers__list_deliver_and_lag__as_the_control_operations(endpoint: EmbeddedEndpoint, east: Any) -> None:
    """``labkit.engine_plugins.faults.replications``, ``deliver_replications`` and ``set_replication_lag``
    send the control operations from a connection: what a lesson or the race lab calls."""
    conn = Connection("embedded", endpoint.url, WEST)
    name = global_table(east, WEST)
    assert set_replication_lag(conn, None) == 1.0
    east.put_item(TableName=name, Item=item("a"))
    (delivery,) = replications(conn)
    assert (delivery["TableName"], delivery["To"], delivery["Due"]) == (name, WEST, None)
    assert deliver_replications(conn, [delivery["Id"]]) == [{"Id": delivery["Id"], "Outcome": "applied"}]
    assert read(conn.client, name, "a") == item("a")
    assert deliver_replications(conn) == [] and set_replication_lag(conn, 1.0) is None


# --- never a 500 ------------------------------------------------------------------------------------
_REGIONS = st.sampled_from([EAST, WEST, OHIO, IRELAND, "us-west-1", "moon-1", ""])
_ACTION = st.fixed_dictionaries({}, optional={"RegionName": _REGIONS | st.integers(), "KMSMasterKeyId": st.text()})
_JUNK = st.none() | st.integers() | st.text(max_size=3) | st.lists(st.integers(), max_size=2)
_UPDATE = st.dictionaries(st.sampled_from(["Create", "Update", "Delete", "Disassociate"]), _ACTION | _JUNK, max_size=2)
_GLOBAL = st.fixed_dictionaries(
    {},
    optional={
        "ReplicaUpdates": st.lists(_UPDATE | _JUNK, max_size=3) | _JUNK,
        "MultiRegionConsistency": st.sampled_from(["EVENTUAL", "STRONG", "strong"]) | _JUNK,
        "GlobalTableWitnessUpdates": st.lists(
            st.dictionaries(st.sampled_from(["Create", "Delete"]), _ACTION), max_size=2
        ),
        "BillingMode": st.just("PAY_PER_REQUEST"),
    },
)


@FUZZ
@given(params=_GLOBAL, global_first=st.booleans())
def test_fuzz__update_table_global_parameters__never_500_errors_make_nothing(
    endpoint: EmbeddedEndpoint, east: Any, params: dict[str, Any], global_first: bool
) -> None:
    """Whatever ReplicaUpdates, MultiRegionConsistency and GlobalTableWitnessUpdates hold, the answer is never a
    500, and a refusal leaves the table's replicas as they were."""
    name = global_table(east, WEST) if global_first else make_table(east)
    before = east.describe_table(TableName=name)["Table"].get("Replicas")
    status, payload = post(
        endpoint.url, f"{DYNAMODB_TARGET}.{Op.UPDATE_TABLE}", json.dumps({"TableName": name, **params}).encode()
    )
    assert status != 500, payload
    if status >= 400:
        assert east.describe_table(TableName=name)["Table"].get("Replicas") == before, params
