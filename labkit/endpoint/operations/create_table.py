"""CreateTable: the members DynamoDB requires though botocore's model marks them optional, and its
rules for key schemas, local secondary indexes and billing modes that moto does not check (or
words differently), checked before moto creates the table (API reference: CreateTable)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import invalid
from ..plan import Plan
from ..schema import SchemaOf
from ..wire.decode import Request
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response

MAX_LOCAL_INDEXES = 5
#: Required by DynamoDB though botocore's model marks them optional.
_ALSO_REQUIRED = ("KeySchema", "AttributeDefinitions")


def _names(elements: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(e.get("AttributeName")) for e in elements]


def _check_key_schema(schema: Sequence[Mapping[str, Any]], defined: list[str]) -> None:
    keys = _names(schema)
    if len(keys) > len(defined):
        raise invalid("Invalid KeySchema: Some index key attribute have no definition")
    if any(key not in defined for key in keys):
        raise invalid(
            "One or more parameter values were invalid: Some index key attributes are not defined in "
            f"AttributeDefinitions. Keys: [{', '.join(keys)}], AttributeDefinitions: [{', '.join(defined)}]"
        )
    if len(keys) == 2 and keys[0] == keys[1]:
        raise invalid("Both the Hash Key and the Range Key element in the KeySchema have the same name")
    if schema[0].get("KeyType") != "HASH":
        raise invalid("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(schema) == 2 and schema[1].get("KeyType") != "RANGE":
        raise invalid("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")


def _check_local_indexes(params: Mapping[str, Any], defined: list[str], seen: set[str]) -> None:
    indexes = params.get("LocalSecondaryIndexes")
    if indexes is None:
        return
    if not indexes:
        raise invalid("One or more parameter values were invalid: List of LocalSecondaryIndexes is empty")
    table_keys = params["KeySchema"]
    if len(table_keys) != 2:
        raise invalid(
            "One or more parameter values were invalid: Table KeySchema does not have a range key, which is "
            "required when specifying a LocalSecondaryIndex"
        )
    table_hash = table_keys[0].get("AttributeName")
    for index in indexes:
        name, schema = index.get("IndexName"), index["KeySchema"]
        _check_key_schema(schema, defined)
        if len(schema) != 2:
            raise invalid(
                "One or more parameter values were invalid: Index KeySchema does not have a range key for index: "
                f"{name}"
            )
        if schema[0].get("AttributeName") != table_hash:
            raise invalid(
                "One or more parameter values were invalid: Index KeySchema does not have the same leading hash key "
                f"as table KeySchema for index: {name}. index hash key: {schema[0].get('AttributeName')}, table hash "
                f"key: {table_hash}"
            )
        if name in seen:
            raise invalid(f"One or more parameter values were invalid: Duplicate index name: {name}")
        seen.add(str(name))
    if len(indexes) > MAX_LOCAL_INDEXES:
        raise invalid(
            "One or more parameter values were invalid: Number of LocalSecondaryIndexes exceeds per-table limit of 5"
        )


def check_billing(mode: str, throughput: Any, current: str | None = None) -> None:
    if mode == "PAY_PER_REQUEST" and throughput is not None:
        raise invalid(
            "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be "
            "specified when BillingMode is PAY_PER_REQUEST"
        )
    if mode == "PROVISIONED" and throughput is None and current != "PROVISIONED":
        raise invalid(
            "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be "
            "specified when BillingMode is PROVISIONED"
        )


#: DynamoDB's answers to a StreamSpecification that does not fit the request or the table (recorded on
#: DynamoDB: "UpdateViewType" is its word); UpdateTable's, and
#: CreateTable's too (its own words for these two are not recorded: decision 238).
STREAM_VIEW_REQUIRED = (
    "One or more parameter values were invalid: If stream is being enabled then UpdateViewType is required"
)
STREAM_VIEW_FORBIDDEN = (
    "One or more parameter values were invalid: If stream is being disabled, then UpdateViewType must not be specified"
)


def check_stream_request(spec: Any) -> None:
    """A StreamSpecification that enables a stream names its view type; one that disables it names none."""
    if not isinstance(spec, Mapping):
        return
    if spec.get("StreamEnabled") is True and spec.get("StreamViewType") is None:
        raise invalid(STREAM_VIEW_REQUIRED)
    if spec.get("StreamEnabled") is False and spec.get("StreamViewType") is not None:
        raise invalid(STREAM_VIEW_FORBIDDEN)


def _check_rules(params: Mapping[str, Any]) -> None:
    """CreateTable's rules that moto does not check (or words differently)."""
    defined = _names(params["AttributeDefinitions"])
    twice = next((name for i, name in enumerate(defined) if name in defined[:i]), None)
    if twice is not None:  # moto answers "Some AttributeDefinitions are not used"
        raise invalid(f"Attribute Name is duplicated: {twice}")
    _check_key_schema(params["KeySchema"], defined)
    check_billing(str(params.get("BillingMode") or "PROVISIONED"), params.get("ProvisionedThroughput"))
    check_stream_request(params.get("StreamSpecification"))
    seen: set[str] = set()
    _check_local_indexes(params, defined, seen)
    for index in params.get("GlobalSecondaryIndexes") or ():
        name = index.get("IndexName")
        _check_key_schema(index["KeySchema"], defined)
        if name in seen:
            raise invalid(f"One or more parameter values were invalid: Duplicate index name: {name}")
        seen.add(str(name))


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    for name in _ALSO_REQUIRED:
        if request.params.get(name) is None:
            raise invalid(
                f"1 validation error detected: Value null at '{name[0].lower() + name[1:]}' failed to satisfy "
                "constraint: Member must not be null"
            )


def _answer(store: MotoStore, request: Request) -> Response | None:
    _check_rules(request.params)
    return None


STEPS = Steps(check=_check, answer=_answer)

__all__ = ["MAX_LOCAL_INDEXES", "STEPS", "check_billing", "check_stream_request"]
