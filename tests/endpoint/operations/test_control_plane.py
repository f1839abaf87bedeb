"""The control plane where moto differed from DynamoDB: CreateTable's LSI rules, UpdateTable's
billing-mode rules, TTL and tags on missing tables, tag ARNs, tags that overwrite, ListTables in
order with paging, and ItemCollectionMetrics.

API reference pages: CreateTable, UpdateTable, UpdateTimeToLive, TagResource, ListTagsOfResource,
ListTables, and ItemCollectionMetrics; messages as DynamoDB answers. Over HTTP with boto3
(client-side validation off) to a real endpoint (ListTables in a region of its own: moto's tables
are shared by every endpoint in the process).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from labkit.endpoint import EmbeddedEndpoint
from tests.endpoint.clients import raw_client, refused, streams_client

HASH = [{"AttributeName": "pk", "KeyType": "HASH"}]
HASH_RANGE = [*HASH, {"AttributeName": "sk", "KeyType": "RANGE"}]


def _defs(*names: str) -> list[dict[str, str]]:
    return [{"AttributeName": n, "AttributeType": "S"} for n in names]


def _lsi(hash_key: str = "pk", name: str = "lsi1", keys: int = 2) -> dict[str, Any]:
    schema = [{"AttributeName": hash_key, "KeyType": "HASH"}, {"AttributeName": "x", "KeyType": "RANGE"}]
    return {"IndexName": name, "KeySchema": schema[:keys], "Projection": {"ProjectionType": "ALL"}}


def _create(client: Any, name: str, **extra: Any) -> None:
    params: dict[str, Any] = {"KeySchema": HASH, "AttributeDefinitions": _defs("pk"), **extra}
    if "ProvisionedThroughput" not in extra:
        params.setdefault("BillingMode", "PAY_PER_REQUEST")
    client.create_table(TableName=name, **params)


# --- CreateTable -------------------------------------------------------------------------------------

LSI_RULES: dict[str, tuple[dict[str, Any], str]] = {
    "hash-only table": (
        {"KeySchema": HASH, "AttributeDefinitions": _defs("pk", "x"), "LocalSecondaryIndexes": [_lsi()]},
        "One or more parameter values were invalid: Table KeySchema does not have a range key, which is required "
        "when specifying a LocalSecondaryIndex",
    ),
    "other hash key": (
        {
            "KeySchema": HASH_RANGE,
            "AttributeDefinitions": _defs("pk", "sk", "x", "o"),
            "LocalSecondaryIndexes": [_lsi("o")],
        },
        "One or more parameter values were invalid: Index KeySchema does not have the same leading hash key as table "
        "KeySchema for index: lsi1. index hash key: o, table hash key: pk",
    ),
    "no range key": (
        {"KeySchema": HASH_RANGE, "AttributeDefinitions": _defs("pk", "sk"), "LocalSecondaryIndexes": [_lsi(keys=1)]},
        "One or more parameter values were invalid: Index KeySchema does not have a range key for index: lsi1",
    ),
    "duplicate name": (
        {
            "KeySchema": HASH_RANGE,
            "AttributeDefinitions": _defs("pk", "sk", "x"),
            "LocalSecondaryIndexes": [_lsi(), _lsi()],
        },
        "One or more parameter values were invalid: Duplicate index name: lsi1",
    ),
    "six indexes": (
        {
            "KeySchema": HASH_RANGE,
            "AttributeDefinitions": _defs("pk", "sk", "x"),
            "LocalSecondaryIndexes": [_lsi(name=f"lsi{i}") for i in range(6)],
        },
        "One or more parameter values were invalid: Number of LocalSecondaryIndexes exceeds per-table limit of 5",
    ),
    "duplicate key attribute": (
        {"KeySchema": [*HASH, {"AttributeName": "pk", "KeyType": "RANGE"}], "AttributeDefinitions": _defs("pk")},
        "Invalid KeySchema: Some index key attribute have no definition",
    ),
}


@pytest.mark.parametrize("case", list(LSI_RULES), ids=list(LSI_RULES))
def test_create_table__local_secondary_index_rules__validation_exception(client: Any, case: str) -> None:
    """An LSI needs a table with a sort key, the table's partition key, a sort key of its own, a unique name, and at
    most 5 per table; a KeySchema names each attribute once."""
    params, message = LSI_RULES[case]
    name = f"labkit-lsi-{uuid.uuid4().hex[:8]}"
    assert refused(client.create_table, TableName=name, BillingMode="PAY_PER_REQUEST", **params) == (
        "ValidationException",
        message,
    )
    assert name not in client.list_tables()["TableNames"]


@pytest.mark.parametrize("second_type", ["S", "N"])
def test_create_table__attribute_defined_twice__attribute_name_is_duplicated(client: Any, second_type: str) -> None:
    """An attribute defined twice in AttributeDefinitions (a generator that lists each index's keys, the table's
    partition key again for a GSI) is "Attribute Name is duplicated: pk", whether the types agree or not."""
    name = f"labkit-dup-{uuid.uuid4().hex[:8]}"
    gsi = {
        "IndexName": "by-day",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "day", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    }
    definitions = [*_defs("pk", "sk", "day"), {"AttributeName": "pk", "AttributeType": second_type}]
    assert refused(
        client.create_table,
        TableName=name,
        KeySchema=HASH_RANGE,
        AttributeDefinitions=definitions,
        GlobalSecondaryIndexes=[gsi],
        BillingMode="PAY_PER_REQUEST",
    ) == ("ValidationException", "Attribute Name is duplicated: pk")
    assert name not in client.list_tables()["TableNames"]


def test_create_table__pay_per_request_with_throughput_refused(client: Any) -> None:
    """ "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"."""
    assert refused(
        client.create_table,
        TableName="labkit-ppr",
        KeySchema=HASH,
        AttributeDefinitions=_defs("pk"),
        BillingMode="PAY_PER_REQUEST",
        ProvisionedThroughput={"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
    ) == (
        "ValidationException",
        "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be "
        "specified when BillingMode is PAY_PER_REQUEST",
    )


# --- UpdateTable --------------------------------------------------------------------------------------


def test_update_table__billing_mode_rules(client: Any) -> None:
    """PAY_PER_REQUEST takes no ProvisionedThroughput; switching to PROVISIONED needs one; the same throughput again
    is "The provisioned throughput for the table will not change"."""
    _create(client, "labkit-prov", ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
    _create(client, "labkit-ondemand")
    throughput = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    assert refused(
        client.update_table, TableName="labkit-prov", BillingMode="PAY_PER_REQUEST", ProvisionedThroughput=throughput
    )[1] == (
        "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified "
        "when BillingMode is PAY_PER_REQUEST"
    )
    assert refused(client.update_table, TableName="labkit-ondemand", BillingMode="PROVISIONED")[1] == (
        "One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is "
        "PROVISIONED"
    )
    code, message = refused(
        client.update_table, TableName="labkit-prov", BillingMode="PROVISIONED", ProvisionedThroughput=throughput
    )
    assert code == "ValidationException"
    assert message.startswith("The provisioned throughput for the table will not change. The requested value equals")
    client.update_table(TableName="labkit-ondemand", BillingMode="PAY_PER_REQUEST")  # a no-op is fine
    client.update_table(
        TableName="labkit-prov", ProvisionedThroughput={"ReadCapacityUnits": 9, "WriteCapacityUnits": 5}
    )
    described = client.describe_table(TableName="labkit-prov")["Table"]["ProvisionedThroughput"]
    assert (described["ReadCapacityUnits"], described["WriteCapacityUnits"]) == (9, 5)


def test_update_table__missing_table__resource_not_found(client: Any) -> None:
    """UpdateTable on a table that does not exist: ResourceNotFoundException."""
    code, _ = refused(client.update_table, TableName="labkit-nope", BillingMode="PAY_PER_REQUEST")
    assert code == "ResourceNotFoundException"


# --- TTL and tags ------------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["update_time_to_live", "describe_time_to_live"])
def test_time_to_live__missing_table__resource_not_found_exception(client: Any, operation: str) -> None:
    """UpdateTimeToLive / DescribeTimeToLive on a missing table: ResourceNotFoundException (not ResourceNotFound)."""
    extra = (
        {"TimeToLiveSpecification": {"Enabled": True, "AttributeName": "ttl"}} if operation.startswith("update") else {}
    )
    assert refused(getattr(client, operation), TableName="labkit-nope", **extra) == (
        "ResourceNotFoundException",
        "Requested resource not found",
    )


def test_tags__same_key_again__overwrites_the_value(client: Any) -> None:
    """TagResource: "If a tag with the same key already exists, its value is overwritten" (one tag per key)."""
    _create(client, "labkit-tags")
    arn = client.describe_table(TableName="labkit-tags")["Table"]["TableArn"]
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "test"}, {"Key": "team", "Value": "a"}])
    client.tag_resource(ResourceArn=arn, Tags=[{"Key": "env", "Value": "production"}])
    tags = client.list_tags_of_resource(ResourceArn=arn)["Tags"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("env", "production"), ("team", "a")]
    client.untag_resource(ResourceArn=arn, TagKeys=["team"])
    assert client.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "env", "Value": "production"}]


def test_tags__bad_arn__validation_exception_missing_table__resource_not_found(client: Any) -> None:
    """A ResourceArn that is not a table ARN: ValidationException; a table ARN of a missing table:
    "Requested resource not found: ResourcArn: <arn> not found" (DynamoDB's own spelling)."""
    code, message = refused(client.tag_resource, ResourceArn="not-a-valid-arn", Tags=[{"Key": "a", "Value": "b"}])
    assert (code, message) == (
        "ValidationException",
        "Invalid TableArn: Invalid ResourceArn provided as input not-a-valid-arn",
    )
    arn = "arn:aws:dynamodb:us-east-1:123456789012:table/labkit-nope"
    assert refused(client.list_tags_of_resource, ResourceArn=arn) == (
        "ResourceNotFoundException",
        f"Requested resource not found: ResourcArn: {arn} not found",
    )
    other = "arn:aws:dynamodb:us-east-1:000000000000:table/labkit-nope"
    assert refused(client.list_tags_of_resource, ResourceArn=other)[0] == "AccessDeniedException"


# --- ListTables ---------------------------------------------------------------------------------------


def test_list_tables__sorted__limit_and_exclusive_start_page_through(endpoint: EmbeddedEndpoint) -> None:
    """ListTables returns names in order; Limit pages them, LastEvaluatedTableName / ExclusiveStartTableName go on."""
    client = raw_client(endpoint.url, region="ap-southeast-3")
    for name in ("labkit-zeta", "labkit-alpha", "labkit-Mid", "labkit-beta"):
        _create(client, name)
    assert client.list_tables()["TableNames"] == ["labkit-Mid", "labkit-alpha", "labkit-beta", "labkit-zeta"]
    first = client.list_tables(Limit=3)
    assert first == {
        **first,
        "TableNames": ["labkit-Mid", "labkit-alpha", "labkit-beta"],
        "LastEvaluatedTableName": "labkit-beta",
    }
    rest = client.list_tables(Limit=3, ExclusiveStartTableName=first["LastEvaluatedTableName"])
    assert rest["TableNames"] == ["labkit-zeta"] and "LastEvaluatedTableName" not in rest
    for name in client.list_tables()["TableNames"]:
        client.delete_table(TableName=name)


# --- ItemCollectionMetrics ----------------------------------------------------------------------------


def test_item_collection_metrics__size_on_a_table_with_an_lsi(client: Any) -> None:
    """ReturnItemCollectionMetrics=SIZE on a table with a local secondary index: ItemCollectionKey (the partition
    key) and SizeEstimateRangeGB (two bounds); NONE, or a table without an LSI: no ItemCollectionMetrics."""
    client.create_table(
        TableName="labkit-icm",
        KeySchema=HASH_RANGE,
        AttributeDefinitions=_defs("pk", "sk", "x"),
        LocalSecondaryIndexes=[_lsi()],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {"pk": {"S": "p"}, "sk": {"S": "a"}, "x": {"S": "v"}}
    for call, params in (
        (client.put_item, {"Item": item}),
        (
            client.update_item,
            {"Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}, "AttributeUpdates": {"d": {"Value": {"S": "1"}}}},
        ),
        (client.delete_item, {"Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}}),
    ):
        metrics = call(TableName="labkit-icm", ReturnItemCollectionMetrics="SIZE", **params)["ItemCollectionMetrics"]
        assert metrics == {"ItemCollectionKey": {"pk": {"S": "p"}}, "SizeEstimateRangeGB": [0.0, 1.0]}
    assert "ItemCollectionMetrics" not in client.put_item(
        TableName="labkit-icm", Item=item, ReturnItemCollectionMetrics="NONE"
    )
    _create(client, "labkit-no-lsi")
    plain = client.put_item(TableName="labkit-no-lsi", Item={"pk": {"S": "p"}}, ReturnItemCollectionMetrics="SIZE")
    assert "ItemCollectionMetrics" not in plain
    batch = client.batch_write_item(
        RequestItems={"labkit-icm": [{"PutRequest": {"Item": item}}]}, ReturnItemCollectionMetrics="SIZE"
    )
    assert batch["ItemCollectionMetrics"] == {
        "labkit-icm": [{"ItemCollectionKey": {"pk": {"S": "p"}}, "SizeEstimateRangeGB": [0.0, 1.0]}]
    }


def _stream_table(client: Any) -> str:
    name = f"labkit-streams-{uuid.uuid4().hex[:8]}"
    _create(client, name)
    return name


def test_update_table__stream_disabled__later_writes_succeed_and_add_no_record(endpoint: EmbeddedEndpoint) -> None:
    """UpdateTable's StreamSpecification: "StreamEnabled - Indicates whether DynamoDB Streams is enabled (true)
    or disabled (false) on the table"; a disabled stream takes no more records. moto kept the shard and
    failed every later write (KeyError 'StreamViewType': a 500); now the write succeeds and adds nothing."""
    client = raw_client(endpoint.url)
    name = _stream_table(client)
    on = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    arn = client.update_table(TableName=name, StreamSpecification=on)["TableDescription"]["LatestStreamArn"]
    client.put_item(TableName=name, Item={"pk": {"S": "before"}})
    client.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    client.put_item(TableName=name, Item={"pk": {"S": "after"}})
    client.delete_item(TableName=name, Key={"pk": {"S": "before"}})
    assert client.get_item(TableName=name, Key={"pk": {"S": "after"}})["Item"] == {"pk": {"S": "after"}}
    assert client.describe_table(TableName=name)["Table"].get("StreamSpecification") is None
    assert arn.startswith(client.describe_table(TableName=name)["Table"]["TableArn"] + "/stream/")


#: Developer Guide, "Change data capture for DynamoDB Streams", and the messages DynamoDB answers (recorded:
#: "UpdateViewType" is its word).
ENABLED = "Table already has an enabled stream: TableName: {}"
NONE_TO_DISABLE = "Table has no stream to disable: TableName: {}"
VIEW_REQUIRED = "One or more parameter values were invalid: If stream is being enabled then UpdateViewType is required"
VIEW_FORBIDDEN = (
    "One or more parameter values were invalid: If stream is being disabled, then UpdateViewType must not be specified"
)


def test_update_table__stream_against_the_table__validation_exception_and_the_table_unchanged(
    endpoint: EmbeddedEndpoint,
) -> None:
    """ "You receive a ValidationException if you try to enable a stream on a table that already has a stream, or
    if you try to disable a stream on a table that doesn't have a stream"; a stream enabled names its view type,
    one disabled names none. moto answered ResourceInUseException "Cannot enable stream", and accepted the other
    three: {StreamEnabled: true} alone made a stream with no view type (every later write a 500), and
    {StreamEnabled: false, StreamViewType: ...} enabled one."""
    client = raw_client(endpoint.url)
    name = _stream_table(client)
    update = client.update_table
    assert refused(update, TableName=name, StreamSpecification={"StreamEnabled": False}) == (
        "ValidationException",
        NONE_TO_DISABLE.format(name),
    )
    assert refused(update, TableName=name, StreamSpecification={"StreamEnabled": True}) == (
        "ValidationException",
        VIEW_REQUIRED,
    )
    off_with_view = {"StreamEnabled": False, "StreamViewType": "KEYS_ONLY"}
    assert refused(update, TableName=name, StreamSpecification=off_with_view) == ("ValidationException", VIEW_FORBIDDEN)
    assert "LatestStreamArn" not in client.describe_table(TableName=name)["Table"]
    update(TableName=name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})
    before = client.describe_table(TableName=name)["Table"]
    for view in ("NEW_IMAGE", "KEYS_ONLY"):  # the same again, or another view type: not in place
        again = {"StreamEnabled": True, "StreamViewType": view}
        assert refused(update, TableName=name, StreamSpecification=again) == (
            "ValidationException",
            ENABLED.format(name),
        )
    assert client.describe_table(TableName=name)["Table"] == before
    client.put_item(TableName=name, Item={"pk": {"S": "written"}})


def test_update_table__stream_disabled_then_enabled__a_new_stream_with_a_different_arn_takes_the_writes(
    endpoint: EmbeddedEndpoint,
) -> None:
    """ "If you disable and then re-enable a stream on the table, a new stream is created with a different stream
    descriptor" (moto refused: ResourceInUseException "Cannot enable stream"). The new stream has the new view
    type, and a write after it is a record there with that view's image."""
    client = raw_client(endpoint.url)
    name = _stream_table(client)
    on = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    first = client.update_table(TableName=name, StreamSpecification=on)["TableDescription"]["LatestStreamArn"]
    client.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    keys_only = {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}
    second = client.update_table(TableName=name, StreamSpecification=keys_only)["TableDescription"]
    assert second["LatestStreamArn"] != first
    assert second["StreamSpecification"] == keys_only
    assert client.describe_table(TableName=name)["Table"]["LatestStreamArn"] == second["LatestStreamArn"]
    client.put_item(TableName=name, Item={"pk": {"S": "after"}, "v": {"S": "x"}})
    streams = streams_client(endpoint.url)
    shard = streams.describe_stream(StreamArn=second["LatestStreamArn"])["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=second["LatestStreamArn"], ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    (record,) = streams.get_records(ShardIterator=iterator)["Records"]
    assert record["eventName"] == "INSERT"
    assert record["dynamodb"]["Keys"] == {"pk": {"S": "after"}}
    assert "NewImage" not in record["dynamodb"]


def test_update_table__stream_enabled_again_but_refused_for_billing__the_old_stream_kept(
    endpoint: EmbeddedEndpoint,
) -> None:
    """A request that would make a new stream and is refused for another of its parameters (PROVISIONED
    without ProvisionedThroughput: "ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
    changes nothing: the table keeps its last stream's ARN, and enabling afterwards still makes a new one."""
    client = raw_client(endpoint.url)
    name = _stream_table(client)
    on = {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    first = client.update_table(TableName=name, StreamSpecification=on)["TableDescription"]["LatestStreamArn"]
    client.update_table(TableName=name, StreamSpecification={"StreamEnabled": False})
    code, _ = refused(client.update_table, TableName=name, StreamSpecification=on, BillingMode="PROVISIONED")
    assert code == "ValidationException"
    assert client.describe_table(TableName=name)["Table"]["LatestStreamArn"] == first
    assert client.describe_table(TableName=name)["Table"].get("StreamSpecification") is None
    again = client.update_table(TableName=name, StreamSpecification=on)["TableDescription"]["LatestStreamArn"]
    assert again != first


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"StreamEnabled": True}, VIEW_REQUIRED),
        ({"StreamEnabled": False, "StreamViewType": "NEW_IMAGE"}, VIEW_FORBIDDEN),
    ],
)
def test_create_table__stream_view_type_not_fitting__validation_exception_and_no_table(
    endpoint: EmbeddedEndpoint, spec: dict[str, Any], message: str
) -> None:
    """CreateTable's StreamSpecification follows UpdateTable's two rules (decision 238: DynamoDB's CreateTable
    words are not recorded, UpdateTable's are used). moto made a stream with no view type (every later write a
    500) or enabled a stream the request disabled."""
    client = raw_client(endpoint.url)
    name = f"labkit-streams-{uuid.uuid4().hex[:8]}"
    params: dict[str, Any] = {"KeySchema": HASH, "AttributeDefinitions": _defs("pk"), "BillingMode": "PAY_PER_REQUEST"}
    assert refused(client.create_table, TableName=name, StreamSpecification=spec, **params) == (
        "ValidationException",
        message,
    )
    assert name not in client.list_tables()["TableNames"]


def test_delete_table__answer__the_table_deleting_then_gone(endpoint: EmbeddedEndpoint) -> None:
    """API reference, DeleteTable: "After a DeleteTable request, the specified table is in the DELETING state until
    DynamoDB completes the deletion" (moto answered ACTIVE). The engine completes it at once: DescribeTable then
    answers ResourceNotFoundException, and deleting it again is refused the same way."""
    client = raw_client(endpoint.url)
    name = _stream_table(client)
    client.put_item(TableName=name, Item={"pk": {"S": "a"}})
    described = client.delete_table(TableName=name)["TableDescription"]
    assert (described["TableName"], described["TableStatus"]) == (name, "DELETING")
    assert refused(client.describe_table, TableName=name)[0] == "ResourceNotFoundException"
    assert refused(client.delete_table, TableName=name)[0] == "ResourceNotFoundException"
