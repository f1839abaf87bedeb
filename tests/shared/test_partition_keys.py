"""One string per partition key value, shared by the engine and fault rules (labkit/shared/partition_keys.py)."""

from __future__ import annotations

import pytest

from labkit.shared.partition_keys import canonical


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"S": "ACCT#1"}, "ACCT#1"),
        ({"N": "1"}, "1"),
        ({"N": "1.0"}, "1"),
        ({"N": "10"}, "10"),
        ({"N": "1.5E2"}, "150"),
        ({"N": "-0.0"}, "0"),
        ({"N": "0.50"}, "0.5"),
        ({"B": "AAE="}, "AAE="),
    ],
)
def test_canonical__equal_key_values__one_string(value: dict[str, str], expected: str) -> None:
    """DynamoDB treats 1 and 1.0 as one number (one partition): both map to the same string."""
    assert canonical(value) == expected


def test_canonical__same_number_two_spellings__equal() -> None:
    """A fault rule written for key 100 matches a request that sent 1E2."""
    assert canonical({"N": "100"}) == canonical({"N": "1E2"}) == canonical({"N": "100.000"})


@pytest.mark.parametrize("value", [{"N": "one"}, {"N": "NaN"}, {"B": "not base64!"}])
def test_canonical__invalid_value__value_error(value: dict[str, str]) -> None:
    """The engine checks values first; an unchecked bad value is a ValueError, never a wrong string."""
    with pytest.raises(ValueError, match="not"):
        canonical(value)
