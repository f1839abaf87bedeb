"""Memory stays bounded: a workshop `labkit serve` runs for hours (measured in a fresh subprocess)."""

from __future__ import annotations

import pytest

from tests.endpoint.memory_probe import measure_memory

#: After the prelude: with BIG, 300 puts of a 390 KB item to one key, then delete it; else N ADDs to one item.
SCRIPT = r"""
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
    return int(measure_memory(SCRIPT, N=str(n), **env))


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
