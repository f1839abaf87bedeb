"""The store's index against its oracle: every Query and Scan page the index serves answers exactly as
moto's own walk of the whole table does (``store.indexed = False``) — items, their order, Count,
ScannedCount, LastEvaluatedKey — on generated tables, writes and paginated reads (hypothesis, a fixed
example count, derandomized). Plus what the index is for: a Query reads its partition's range only."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from labkit.endpoint import DynamoEngine
from tests.endpoint.clients import engine_headers
from tests.endpoint.fuzz_settings import FUZZ

TABLE = "orders-under-test"
PARTITIONS = ["a", "b", "c"]
SORT_KEYS = ["a", "b", "ab", "abc", "b\u00e9", "c", "ca", "d", "\u00e9"]
NUMBERS = ["1", "2", "10", "-2.5", "0.5", "100", "1E+1"]


def _create(engine: DynamoEngine, numeric_hash: bool) -> None:
    if numeric_hash:
        spec: dict[str, Any] = {
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
            "AttributeDefinitions": [
                {"AttributeName": "PK", "AttributeType": "N"},
                {"AttributeName": "G", "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        }
    else:
        spec = {
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": n, "AttributeType": t}
                for n, t in (("PK", "S"), ("SK", "S"), ("G", "S"), ("R", "N"), ("L", "S"))
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-g-r",
                    "KeySchema": [
                        {"AttributeName": "G", "KeyType": "HASH"},
                        {"AttributeName": "R", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                },
                {
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                },
            ],
            "LocalSecondaryIndexes": [
                {
                    "IndexName": "by-l",
                    "KeySchema": [
                        {"AttributeName": "PK", "KeyType": "HASH"},
                        {"AttributeName": "L", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["v"]},
                }
            ],
        }
    _send(engine, "CreateTable", {"TableName": TABLE, "BillingMode": "PAY_PER_REQUEST", **spec})


def _send(engine: DynamoEngine, operation: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, _, body = engine.handle(engine_headers(operation), json.dumps(params).encode())
    return status, json.loads(body or b"{}")


def _both(engine: DynamoEngine, operation: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The answer from the index, checked equal to moto's walk of the table."""
    engine.store.indexed = False
    oracle = _send(engine, operation, params)
    engine.store.indexed = True
    served = _send(engine, operation, params)
    assert served == oracle, (operation, params)
    return served


def _paged(engine: DynamoEngine, operation: str, params: dict[str, Any]) -> int:
    """Every page of a read, each checked against the oracle; how many items in all."""
    seen = 0
    for _ in range(30):
        status, answer = _both(engine, operation, params)
        if status != 200:
            return seen
        seen += int(answer["Count"])
        if "LastEvaluatedKey" not in answer:
            return seen
        params = {**params, "ExclusiveStartKey": answer["LastEvaluatedKey"]}
    return seen


_pk = st.sampled_from(PARTITIONS)
_key = st.sampled_from(SORT_KEYS)
_number = st.sampled_from(NUMBERS)
_write = st.tuples(
    st.sampled_from(["put", "put", "put", "delete", "set-g", "remove-g"]),
    _pk,
    _key,
    st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
    st.one_of(st.none(), _number),
    st.one_of(st.none(), _key),
)
_comparison = st.sampled_from(["<", "<=", ">", ">=", "BETWEEN", "begins_with", "=", None])


def _apply(engine: DynamoEngine, numeric_hash: bool, write: tuple[Any, ...], big: bool) -> None:
    kind, pk, sk, g, r, lsi = write
    key: dict[str, Any] = (
        {"PK": {"N": str(SORT_KEYS.index(sk))}} if numeric_hash else {"PK": {"S": pk}, "SK": {"S": sk}}
    )
    if kind == "put":
        item: dict[str, Any] = {**key, "v": {"S": "x" * (300_000 if big else len(sk))}}
        if g is not None:
            item["G"] = {"S": g}
        if r is not None and not numeric_hash:
            item["R"] = {"N": r}
        if lsi is not None and not numeric_hash:
            item["L"] = {"S": lsi}
        _send(engine, "PutItem", {"TableName": TABLE, "Item": item})
    elif kind == "delete":
        _send(engine, "DeleteItem", {"TableName": TABLE, "Key": key})
    elif kind == "set-g" and g is not None:
        _send(
            engine,
            "UpdateItem",
            {
                "TableName": TABLE,
                "Key": key,
                "UpdateExpression": "SET G = :g",
                "ExpressionAttributeValues": {":g": {"S": g}},
            },
        )
    else:
        _send(engine, "UpdateItem", {"TableName": TABLE, "Key": key, "UpdateExpression": "REMOVE G"})


def _condition(
    attribute: str, comparison: str | None, low: dict[str, Any], high: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    if comparison is None:
        return "", {}
    if comparison == "BETWEEN":
        ordered = sorted([low, high], key=lambda v: float(v["N"]) if "N" in v else v["S"])
        return f" AND {attribute} BETWEEN :lo AND :hi", {":lo": ordered[0], ":hi": ordered[1]}
    if comparison == "begins_with":
        if "N" in low:
            return "", {}
        return f" AND begins_with({attribute}, :lo)", {":lo": low}
    return f" AND {attribute} {comparison} :lo", {":lo": low}


@FUZZ
@given(
    numeric_hash=st.booleans(),
    big=st.booleans(),
    writes=st.lists(_write, min_size=8, max_size=60),
    reads=st.lists(
        st.tuples(
            st.sampled_from(["table", "by-l", "by-g-r", "by-g", "scan"]),
            _pk,
            _comparison,
            _key,
            _key,
            st.booleans(),
            st.one_of(st.none(), st.integers(1, 4)),
            st.sampled_from([None, (0, 2), (1, 2), (2, 3)]),
        ),
        min_size=4,
        max_size=12,
    ),
)
def test_index__every_query_and_scan_page__answers_as_moto_walking_the_table(
    numeric_hash: bool, big: bool, writes: list[tuple[Any, ...]], reads: list[tuple[Any, ...]]
) -> None:
    """Generated writes (puts, deletes, index keys set and removed, some items of 300 KB so pages stop at 1 MB),
    then Queries (each key-condition operator, both directions, Limit) and Scans (table or index, segments),
    paged to the end: the index's answer equals moto's on every page."""
    engine = DynamoEngine()
    _create(engine, numeric_hash)
    for write in writes:
        _apply(engine, numeric_hash, write, big and write[0] == "put" and write[2] in ("a", "b", "c"))
    for target, pk, comparison, low, high, forward, limit, segments in reads:
        if big:
            comparison = None  # a range ending at a full page is where the index (as DynamoDB) and moto differ
        base: dict[str, Any] = {"TableName": TABLE, "ReturnConsumedCapacity": "TOTAL"}
        if limit is not None:
            base["Limit"] = limit
        if target == "scan" or numeric_hash and target not in ("table", "by-g"):
            index = "by-g" if numeric_hash and target == "by-g" else None
            scan = {**base, **({"IndexName": index} if index else {})}
            if segments is not None:
                scan |= {"Segment": segments[0], "TotalSegments": segments[1]}
            _paged(engine, "Scan", scan)
            continue
        query: dict[str, Any] = {**base, "ScanIndexForward": forward}
        if target == "table":
            hash_value = {"N": str(PARTITIONS.index(pk))} if numeric_hash else {"S": pk}
            extra, values = ("", {}) if numeric_hash else _condition("SK", comparison, {"S": low}, {"S": high})
            query |= {
                "KeyConditionExpression": "PK = :pk" + extra,
                "ExpressionAttributeValues": {":pk": hash_value, **values},
            }
        elif target == "by-l":
            extra, values = _condition("L", comparison, {"S": low}, {"S": high})
            query |= {"IndexName": "by-l", "KeyConditionExpression": "PK = :pk" + extra}
            query["ExpressionAttributeValues"] = {":pk": {"S": pk}, **values}
        else:
            g = {"S": ["x", "y", "z"][PARTITIONS.index(pk)]}
            extra, values = ("", {})
            if target == "by-g-r":
                extra, values = _condition(
                    "R", comparison, {"N": NUMBERS[SORT_KEYS.index(low) % 7]}, {"N": NUMBERS[SORT_KEYS.index(high) % 7]}
                )
            query |= {"IndexName": target, "KeyConditionExpression": "G = :g" + extra}
            query["ExpressionAttributeValues"] = {":g": g, **values}
        _paged(engine, "Query", query)


def test_index__a_query_reads_its_partition_range_only() -> None:
    """With 2,000 items in other partitions, a Query of a 5-item range looks at 5 items: the index hands the
    query its range, never the table (counted by wrapping the item lookup)."""
    engine = DynamoEngine()
    _create(engine, numeric_hash=False)
    for p in range(200):
        requests = [{"PutRequest": {"Item": {"PK": {"S": f"p{p}"}, "SK": {"S": f"s{s:02}"}}}} for s in range(10)]
        for start in range(0, 10, 25):
            _send(engine, "BatchWriteItem", {"RequestItems": {TABLE: requests[start : start + 25]}})
    backend = engine.store.real("123456789012", "us-east-1")
    table = backend.get_table(TABLE)
    looked: list[Any] = []
    real_get = table.get_item

    def counted(*args: Any, **kwargs: Any) -> Any:
        looked.append(args)
        return real_get(*args, **kwargs)

    params = {
        "TableName": TABLE,
        "KeyConditionExpression": "PK = :p AND SK BETWEEN :a AND :b",
        "ExpressionAttributeValues": {":p": {"S": "p7"}, ":a": {"S": "s02"}, ":b": {"S": "s06"}},
    }
    _send(engine, "Query", params)  # builds the index once
    table.get_item = counted
    status, answer = _send(engine, "Query", params)
    assert status == 200 and [i["SK"]["S"] for i in answer["Items"]] == ["s02", "s03", "s04", "s05", "s06"]
    assert len(looked) == 5
