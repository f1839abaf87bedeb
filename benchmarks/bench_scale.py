"""What a read costs as the table grows: Query, index Query, Scan page, GetItem and UpdateItem at 1,000,
20,000 and 100,000 items, measured in one run.

    python benchmarks/bench_scale.py [--sizes 1000,20000,100000] [--calls 200] [--walk 1000,20000]

Each table (PK + SK, a GSI on G) holds one 100-item partition ("hot", also 100 items under one G value)
and fills the rest with 100-item partitions of its own. Over HTTP to labkit's embedded endpoint, one
client: the median of ``--calls`` Queries of the hot partition (table, then GSI), Scan pages of 100 items
from the middle of the table (an ExclusiveStartKey), GetItems and UpdateItems (ADD on one item).
``--walk`` sizes are measured again with the store's index off (moto walking the whole table for
each read, as before the index), for reference. Nothing here asserts on time; it prints numbers and
the ratio of the largest size to the smallest.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from common import client

from labkit.embedded import start_endpoint
from labkit.shared.catalogue import DYNAMODB_TARGET

HEADERS = {
    "content-type": "application/x-amz-json-1.0",
    "authorization": "AWS4-HMAC-SHA256 Credential=bench/20260101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=0",
}


def fill(engine: Any, table: str, size: int) -> None:
    """Create ``table`` and write ``size`` items in-process (no HTTP), 25 per BatchWriteItem."""

    def send(operation: str, params: dict[str, Any]) -> None:
        headers = {**HEADERS, "x-amz-target": f"{DYNAMODB_TARGET}.{operation}"}
        status, _, body = engine.handle(headers, json.dumps(params).encode())
        assert status == 200, body

    send(
        "CreateTable",
        {
            "TableName": table,
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": "S"} for n in ("PK", "SK", "G")],
            "BillingMode": "PAY_PER_REQUEST",
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-g",
                    "KeySchema": [{"AttributeName": "G", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
    )
    batch: list[dict[str, Any]] = []
    for i in range(size):
        partition = "hot" if i < 100 else f"p{i // 100:05}"
        item = {"PK": {"S": partition}, "SK": {"S": f"{i % 100:03}"}, "G": {"S": partition}, "v": {"S": "x" * 40}}
        batch.append({"PutRequest": {"Item": item}})
        if len(batch) == 25:
            send("BatchWriteItem", {"RequestItems": {table: batch}})
            batch = []
    if batch:
        send("BatchWriteItem", {"RequestItems": {table: batch}})


def median_ms(call: Callable[[], Any], calls: int) -> float:
    for _ in range(5):
        call()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def measure(url: str, table: str, size: int, calls: int) -> dict[str, float]:
    c = client(url)
    hot = {":p": {"S": "hot"}}
    middle = {"PK": {"S": f"p{size // 200:05}"}, "SK": {"S": "050"}} if size > 100 else None

    def query() -> None:
        answer = c.query(TableName=table, KeyConditionExpression="PK = :p", ExpressionAttributeValues=hot)
        assert answer["Count"] == 100

    def index_query() -> None:
        answer = c.query(
            TableName=table, IndexName="by-g", KeyConditionExpression="G = :p", ExpressionAttributeValues=hot
        )
        assert answer["Count"] == 100

    def scan_page() -> None:
        extra = {"ExclusiveStartKey": middle} if middle else {}
        answer = c.scan(TableName=table, Limit=100, **extra)
        assert answer["Count"] == min(100, size)

    def get() -> None:
        assert "Item" in c.get_item(TableName=table, Key={"PK": {"S": "hot"}, "SK": {"S": "042"}})

    def update() -> None:
        c.update_item(
            TableName=table,
            Key={"PK": {"S": "hot"}, "SK": {"S": "043"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    return {
        "Query": median_ms(query, calls),
        "GSI Query": median_ms(index_query, calls),
        "Scan page": median_ms(scan_page, calls),
        "GetItem": median_ms(get, calls),
        "UpdateItem": median_ms(update, calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000", help="table sizes, comma-separated")
    parser.add_argument("--walk", default="1000,20000", help="sizes measured again with the index off")
    parser.add_argument("--calls", type=int, default=200, help="calls per measurement (median)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    walk = [int(s) for s in args.walk.split(",") if s]
    began = time.perf_counter()
    rows: dict[tuple[str, int], dict[str, float]] = {}
    with start_endpoint() as endpoint:
        engine: Any = endpoint.engine
        for size in sorted(set(sizes) | set(walk)):
            table = f"scale-{size}"
            fill(engine, table, size)
            if size in sizes:
                engine.store.indexed = True
                rows[("index", size)] = measure(endpoint.url, table, size, args.calls)
            if size in walk:
                engine.store.indexed = False
                rows[("walk", size)] = measure(endpoint.url, table, size, max(10, args.calls // 10))
                engine.store.indexed = True
            engine.handle(
                {**HEADERS, "x-amz-target": f"{DYNAMODB_TARGET}.DeleteTable"}, json.dumps({"TableName": table}).encode()
            )
    reads = ["Query", "GSI Query", "Scan page", "GetItem", "UpdateItem"]
    print(f"median ms per read over HTTP, one client ({args.calls} calls each; 'walk': the index off, moto alone)\n")
    print(f"{'store':<6} {'items':>8} " + " ".join(f"{r:>10}" for r in reads))
    for (kind, size), found in sorted(rows.items(), key=lambda r: (r[0][0] != "index", r[0][1])):
        print(f"{kind:<6} {size:>8} " + " ".join(f"{found[r]:>10.2f}" for r in reads))
    if len(sizes) > 1:
        low, high = min(sizes), max(sizes)
        print(f"\nratio {high:,} items / {low:,} items (the index):")
        for r in reads:
            print(f"  {r:<10} {rows[('index', high)][r] / rows[('index', low)][r]:>6.2f}x")
    print(f"\n(took {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
