"""The engine's tables live in backends the store owns, not in moto's process-wide registry: moto's
``mock_aws`` resets that registry when it starts and stops, and a team's pytest session mixes both
(a lab table made at import time or by a session fixture, then a ``@mock_aws`` test)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from labkit.embedded import start_endpoint
from tests.endpoint.clients import raw_client, streams_client
from tests.endpoint.tables import make_table


def test_lab_table__survives_a_mock_aws_block__and_mock_aws_tables_stay_in_moto() -> None:
    """A table, its item and its stream made before ``with mock_aws():`` are all there after it; the table
    made inside the block (moto's own) is moto's only: the engine never lists it, and moto's mocked
    DynamoDB never lists the lab's."""
    with start_endpoint() as endpoint:
        client = raw_client(endpoint.url)
        table = make_table(client, stream=True)
        client.put_item(TableName=table, Item={"PK": {"S": "kept"}, "SK": {"S": "1"}})
        stream_arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        with mock_aws():
            mocked = boto3.client("dynamodb", region_name="us-east-1")
            make_table(mocked, range_key=False, name="moto-only")
            assert mocked.list_tables()["TableNames"] == ["moto-only"]
        assert "moto-only" not in client.list_tables()["TableNames"]
        assert table in client.list_tables()["TableNames"]
        item = client.get_item(TableName=table, Key={"PK": {"S": "kept"}, "SK": {"S": "1"}})["Item"]
        assert item == {"PK": {"S": "kept"}, "SK": {"S": "1"}}
        streams = streams_client(endpoint.url)
        described = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]
        assert described["TableName"] == table


def test_two_engines__in_one_process__do_not_share_tables() -> None:
    """Each endpoint's store owns its backends: a table made in one is not in the other."""
    with start_endpoint() as first, start_endpoint() as second:
        table = make_table(raw_client(first.url))
        assert table in raw_client(first.url).list_tables()["TableNames"]
        assert table not in raw_client(second.url).list_tables()["TableNames"]
