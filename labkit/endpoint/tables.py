"""The control plane where moto differs from DynamoDB: CreateTable's and UpdateTable's rules, tag
ARNs, tags that overwrite, ListTables' order and paging. Plain functions over plain data; the
store (:mod:`labkit.endpoint.apply`) calls them before (or instead of) moto.

Messages are DynamoDB's (API reference: CreateTable, UpdateTable, TagResource, ListTables).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .encode import ClientFault

MAX_LOCAL_INDEXES = 5
_ARN = re.compile(r"arn:aws[a-z-]*:dynamodb:([a-z0-9-]+):(\d{12}):table/([a-zA-Z0-9_.-]{3,255})")


def _invalid(message: str) -> ClientFault:
    return ClientFault("ValidationException", message)


def _names(elements: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(e.get("AttributeName")) for e in elements]


def _check_key_schema(schema: Sequence[Mapping[str, Any]], defined: list[str]) -> None:
    keys = _names(schema)
    if len(keys) > len(defined):
        raise _invalid("Invalid KeySchema: Some index key attribute have no definition")
    if any(key not in defined for key in keys):
        raise _invalid(
            "One or more parameter values were invalid: Some index key attributes are not defined in "
            f"AttributeDefinitions. Keys: [{', '.join(keys)}], AttributeDefinitions: [{', '.join(defined)}]"
        )
    if len(keys) == 2 and keys[0] == keys[1]:
        raise _invalid("Both the Hash Key and the Range Key element in the KeySchema have the same name")
    if schema[0].get("KeyType") != "HASH":
        raise _invalid("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(schema) == 2 and schema[1].get("KeyType") != "RANGE":
        raise _invalid("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")


def _check_local_indexes(params: Mapping[str, Any], defined: list[str], seen: set[str]) -> None:
    indexes = params.get("LocalSecondaryIndexes")
    if indexes is None:
        return
    if not indexes:
        raise _invalid("One or more parameter values were invalid: List of LocalSecondaryIndexes is empty")
    table_keys = params["KeySchema"]
    if len(table_keys) != 2:
        raise _invalid(
            "One or more parameter values were invalid: Table KeySchema does not have a range key, which is "
            "required when specifying a LocalSecondaryIndex"
        )
    table_hash = table_keys[0].get("AttributeName")
    for index in indexes:
        name, schema = index.get("IndexName"), index["KeySchema"]
        _check_key_schema(schema, defined)
        if len(schema) != 2:
            raise _invalid(
                "One or more parameter values were invalid: Index KeySchema does not have a range key for index: "
                f"{name}"
            )
        if schema[0].get("AttributeName") != table_hash:
            raise _invalid(
                "One or more parameter values were invalid: Index KeySchema does not have the same leading hash key "
                f"as table KeySchema for index: {name}. index hash key: {schema[0].get('AttributeName')}, table hash "
                f"key: {table_hash}"
            )
        if name in seen:
            raise _invalid(f"One or more parameter values were invalid: Duplicate index name: {name}")
        seen.add(str(name))
    if len(indexes) > MAX_LOCAL_INDEXES:
        raise _invalid(
            "One or more parameter values were invalid: Number of LocalSecondaryIndexes exceeds per-table limit of 5"
        )


def _check_billing(mode: str, throughput: Any, current: str | None = None) -> None:
    if mode == "PAY_PER_REQUEST" and throughput is not None:
        raise _invalid(
            "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be "
            "specified when BillingMode is PAY_PER_REQUEST"
        )
    if mode == "PROVISIONED" and throughput is None and current != "PROVISIONED":
        raise _invalid(
            "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be "
            "specified when BillingMode is PROVISIONED"
        )


def check_create(params: Mapping[str, Any]) -> None:
    """CreateTable's rules that moto does not check (or words differently)."""
    defined = _names(params["AttributeDefinitions"])
    _check_key_schema(params["KeySchema"], defined)
    _check_billing(str(params.get("BillingMode") or "PROVISIONED"), params.get("ProvisionedThroughput"))
    seen: set[str] = set()
    _check_local_indexes(params, defined, seen)
    for index in params.get("GlobalSecondaryIndexes") or ():
        name = index.get("IndexName")
        _check_key_schema(index["KeySchema"], defined)
        if name in seen:
            raise _invalid(f"One or more parameter values were invalid: Duplicate index name: {name}")
        seen.add(str(name))


def check_update(params: Mapping[str, Any], current: tuple[float, float] | None) -> None:
    """UpdateTable's billing-mode rules; ``current``: the table's (RCU, WCU) if it is PROVISIONED, else None."""
    mode = params.get("BillingMode") or ("PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    throughput = params.get("ProvisionedThroughput")
    if mode == "PROVISIONED" and current is None and throughput is None:
        raise _invalid(
            "One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is "
            "PROVISIONED"
        )
    _check_billing(str(mode), throughput, "PROVISIONED" if current is not None else "PAY_PER_REQUEST")
    if mode == "PROVISIONED" and current is not None and throughput is not None:
        read, write = throughput.get("ReadCapacityUnits"), throughput.get("WriteCapacityUnits")
        if (read, write) == (int(current[0]), int(current[1])):
            raise _invalid(
                "The provisioned throughput for the table will not change. The requested value equals the current "
                f"value. Current ReadCapacityUnits provisioned for the table: {read}. Requested ReadCapacityUnits: "
                f"{read}. Current WriteCapacityUnits provisioned for the table: {write}. Requested "
                f"WriteCapacityUnits: {write}. Refer to the Amazon DynamoDB Developer Guide for current limits and "
                "how to request higher limits."
            )


def table_of_arn(operation: str, arn: str, account: str, region: str) -> str:
    """The table a tag operation's ResourceArn names (in this account and region), or DynamoDB's refusal."""
    match = _ARN.fullmatch(arn)
    if match is None:
        raise _invalid(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    arn_region, arn_account, name = match.groups()
    if arn_account != account:
        raise ClientFault(
            "AccessDeniedException",
            f"User: arn:aws:iam::{account}:root is not authorized to perform: dynamodb:{operation} on resource: {arn}",
        )
    if arn_region != region:
        raise _invalid(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")
    return name


def missing_arn(arn: str) -> ClientFault:
    """DynamoDB's answer for a tag operation on a table that does not exist (its own spelling, "ResourcArn")."""
    return ClientFault("ResourceNotFoundException", f"Requested resource not found: ResourcArn: {arn} not found")


def merged_tags(existing: Sequence[Mapping[str, str]], new: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """TagResource: a tag with a key the table already has replaces it ("overwrites the existing tag value")."""
    tags = {t["Key"]: t["Value"] for t in existing}
    tags.update({t["Key"]: t["Value"] for t in new})
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def list_tables(names: Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """ListTables: names in order, after ExclusiveStartTableName, at most Limit (100 by default)."""
    ordered = sorted(names)
    start = params.get("ExclusiveStartTableName")
    if start is not None:
        ordered = [n for n in ordered if n > start]
    limit = int(params.get("Limit") or 100)
    page = ordered[:limit]
    answer: dict[str, Any] = {"TableNames": page}
    if len(ordered) > limit:
        answer["LastEvaluatedTableName"] = page[-1]
    return answer


__all__ = ["check_create", "check_update", "list_tables", "merged_tags", "missing_arn", "table_of_arn"]
