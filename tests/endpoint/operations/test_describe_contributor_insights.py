"""DescribeContributorInsights, as DynamoDB documents it (API reference, DescribeContributorInsights).

"Returns information about contributor insights for a given table or global secondary index."
``TableName``: "The name of the table to describe. You can also provide the Amazon Resource Name
(ARN) of the table in this parameter." ``ContributorInsightsStatus``: "Current status of
contributor insights. Valid Values: ENABLING | ENABLED | DISABLING | DISABLED | FAILED".
``ResourceNotFoundException``: "The operation tried to access a nonexistent table or index."
Contributor Insights is off until UpdateContributorInsights enables it, which this endpoint does
not serve: every table and global secondary index it has is DISABLED. Through a plain boto3 client
(validation on), as a team's code calls it; malformed requests through the raw client.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from labkit.endpoint import EmbeddedEndpoint
from tests.endpoint.clients import REGION, refused
from tests.endpoint.tables import make_table


@pytest.fixture(scope="module")
def dynamodb(endpoint: EmbeddedEndpoint) -> Any:
    """A boto3 client as a team makes one: botocore's own validation on."""
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=endpoint.url,
        region_name=REGION,
        aws_access_key_id="labkit",
        aws_secret_access_key="labkit",
    )


def _answer(response: dict[str, Any]) -> dict[str, Any]:
    """Every member botocore read from the answer (its model's), without boto3's ResponseMetadata."""
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


def test_describe_contributor_insights__table__disabled_until_enabled(dynamodb: Any, client: Any) -> None:
    """A table's answer: its name and ContributorInsightsStatus DISABLED (one of the documented values)."""
    table = make_table(client)
    answer = dynamodb.describe_contributor_insights(TableName=table)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert _answer(answer) == {"TableName": table, "ContributorInsightsStatus": "DISABLED"}


def test_describe_contributor_insights__global_secondary_index__named_and_disabled(dynamodb: Any, client: Any) -> None:
    """The reference's "for a given table or global secondary index": the answer names the index too."""
    table = make_table(client, gsi=True)
    answer = dynamodb.describe_contributor_insights(TableName=table, IndexName="email-index")
    assert _answer(answer) == {"TableName": table, "IndexName": "email-index", "ContributorInsightsStatus": "DISABLED"}


def test_describe_contributor_insights__table_arn__answers_for_the_table(dynamodb: Any, client: Any) -> None:
    """The reference's "You can also provide the Amazon Resource Name (ARN) of the table in this parameter"."""
    table = make_table(client)
    arn = client.describe_table(TableName=table)["Table"]["TableArn"]
    answer = dynamodb.describe_contributor_insights(TableName=arn)
    assert _answer(answer) == {"TableName": table, "ContributorInsightsStatus": "DISABLED"}


def test_describe_contributor_insights__missing_table_or_index__resource_not_found(client: Any) -> None:
    """The reference's "The operation tried to access a nonexistent table or index": a missing table, an
    index the table lacks, a local secondary index (Contributor Insights covers tables and global
    secondary indexes)."""
    table = make_table(client, gsi=True)
    lsi_table = make_table(client, lsi=True)
    for params in (
        {"TableName": "labkit-no-such-table"},
        {"TableName": table, "IndexName": "no-such-index"},
        {"TableName": lsi_table, "IndexName": "at-index"},
    ):
        assert refused(client.describe_contributor_insights, **params)[0] == "ResourceNotFoundException", params


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {},
            "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be "
            "null",
        ),
        (
            {"TableName": "t"},
            "1 validation error detected: Value 't' at 'tableName' failed to satisfy constraint: Member must have "
            "length greater than or equal to 3",
        ),
        (
            {"TableName": "labkit-t", "IndexName": "ix"},
            "1 validation error detected: Value 'ix' at 'indexName' failed to satisfy constraint: Member must have "
            "length greater than or equal to 3",
        ),
    ],
)
def test_describe_contributor_insights__malformed__validation_exception_never_a_500(
    client: Any, params: dict[str, Any], message: str
) -> None:
    """What botocore's model requires is checked first, in DynamoDB's words: a 400, never a 500."""
    code, text = refused(client.describe_contributor_insights, **params)
    assert code == "ValidationException"
    assert text == message
