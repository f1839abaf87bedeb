"""Memory stays bounded: a workshop `labkit serve` runs for hours (measured in a fresh subprocess)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = r"""
import gc, json, os
from labkit.embedded import build_engine

AUTH = "AWS4-HMAC-SHA256 Credential=labkit/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"
engine = build_engine()

def call(op, params):
    status, _, body = engine.handle({"x-amz-target": "DynamoDB_20120810." + op, "authorization": AUTH},
                                    json.dumps(params).encode())
    assert status == 200, body

def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

call("CreateTable", {"TableName": "mem", "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
                     "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
                     "BillingMode": "PAY_PER_REQUEST"})
if os.environ.get("BIG"):  # 300 puts of a 390 KB item to one key, then delete it
    put = {"TableName": "mem", "Item": {"PK": {"S": "big"}, "d": {"S": "x" * 390_000}}}
    call("PutItem", put)
    before = rss()
    for _ in range(300):
        call("PutItem", put)
    call("DeleteItem", {"TableName": "mem", "Key": {"PK": {"S": "big"}}})
    print(rss() - before)
    raise SystemExit
update = {"TableName": "mem", "Key": {"PK": {"S": "one"}}, "UpdateExpression": "ADD n :one",
          "ExpressionAttributeValues": {":one": {"N": "1"}}, "ReturnConsumedCapacity": "TOTAL"}
for _ in range(2000):  # warm up: caches, interned strings, allocator arenas
    call("UpdateItem", update)
before = rss()
for _ in range(int(os.environ["N"])):
    call("UpdateItem", update)
print(rss() - before)
"""


def _growth(n: int, **env: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env={**_env(), "N": str(n), **env}
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.slow
def test_memory__20000_update_items_of_one_item__grow_rss_by_under_5_mb() -> None:
    """moto registers every Item it creates (3 per UpdateItem) forever; the engine switches that off."""
    growth = _growth(20_000)
    assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB"


@pytest.mark.slow
def test_memory__300_puts_of_390_kb_to_one_key_then_delete__hold_under_20_mb() -> None:
    """Replaced and deleted items are freed (moto's registry kept every one: 117 MB here)."""
    growth = _growth(0, BIG="1")
    assert growth < 20 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB"
