"""Call keys name the items a call touches."""

from __future__ import annotations

from labkit.races import (
    call_key,
)
from tests.races.conftest import KEY


def test_call_key__items_keys_and_transactions__short_strings() -> None:
    """Keys print as PK/SK; transactions list every item's key."""
    assert call_key("GetItem", {"Key": KEY}) == "COUNTER/C"
    assert call_key("PutItem", {"Item": {**KEY, "n": {"N": "1"}}}) == "COUNTER/C"
    tx = {
        "TransactItems": [
            {"Put": {"Item": {"PK": {"S": "ACCT#1"}, "SK": {"S": "PROFILE"}}}},
            {"Put": {"Item": {"PK": {"S": "UNIQ#EMAIL#a@x.io"}, "SK": {"S": "LOCK"}}}},
            {"ConditionCheck": {"Key": {"PK": {"S": "X"}, "SK": {"S": "Y"}}}},
        ]
    }
    assert call_key("TransactWriteItems", tx) == "ACCT#1/PROFILE; UNIQ#EMAIL#a@x.io/LOCK; X/Y"
    assert call_key("Query", {"ExpressionAttributeValues": {":e": {"S": "a@x.io"}}}) == "a@x.io"
