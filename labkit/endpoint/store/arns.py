"""A table named by its ARN, read as DynamoDB reads it (tag operations' ``ResourceArn``; a
``TableName`` given as an ARN): the table of this account and region, or DynamoDB's refusal."""

from __future__ import annotations

import re

from ..errors import ClientFault, invalid
from ..schema import SchemaOf

_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:([a-z0-9-]+):(\d{12}):table/([a-zA-Z0-9_.-]{3,255})")


def table_of_arn(operation: str, arn: str, account: str, region: str) -> str:
    """The table an ARN names (in this account and region), or DynamoDB's refusal."""
    match = _ARN.fullmatch(arn)
    if match is None:
        raise invalid(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    arn_region, arn_account, name = match.groups()
    if arn_account != account:
        raise ClientFault(
            "AccessDeniedException",
            f"User: arn:aws:iam::{account}:root is not authorized to perform: dynamodb:{operation} on resource: {arn}",
        )
    if arn_region != region:
        raise invalid(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    return name


def missing_arn(arn: str) -> ClientFault:
    """DynamoDB's answer for a tag operation on a table that does not exist (its own spelling, "ResourcArn")."""
    return ClientFault("ResourceNotFoundException", f"Requested resource not found: ResourcArn: {arn} not found")


def resource_table(operation: str, arn: str, account: str, region: str, schema_of: SchemaOf) -> str:
    """The existing table a tag operation's ResourceArn names, or DynamoDB's refusal."""
    name = table_of_arn(operation, arn, account, region)
    if schema_of(name) is None:
        raise missing_arn(arn)
    return name


__all__ = ["missing_arn", "resource_table", "table_of_arn"]
