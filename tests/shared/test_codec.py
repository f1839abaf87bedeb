"""The one item codec: clear ValidationErrors where boto3/botocore would fail obscurely."""

from __future__ import annotations

from decimal import Decimal

import pytest

from labkit.shared.codec import from_wire, plain_item, serialize, to_wire
from labkit.shared.errors import ValidationError


def test_to_wire__plain_values__roundtrip() -> None:
    """str, int, bool, None, lists and maps go out and come back (numbers as Decimal)."""
    item = {"PK": "A", "n": 10**37, "ok": True, "none": None, "tags": ["a", 1], "m": {"k": "v"}}
    back = from_wire(to_wire(item))
    assert back == {**item, "n": Decimal(10**37), "tags": ["a", Decimal(1)]}
    assert plain_item(to_wire(item))["n"] == 10**37


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (1.5, "float"),
        ({"inner": [0.1]}, "float"),
        (10**39, "38 significant digits"),
        ("a\ud800b", r"lone surrogate U\+D800"),
    ],
)
def test_serialize__not_storable__validation_error_naming_attribute(value: object, says: str) -> None:
    """float, over-38-digit numbers, lone surrogates: ValidationError naming the attribute, not TypeError/Inexact."""
    with pytest.raises(ValidationError, match=says) as info:
        serialize(value, "score")
    assert str(info.value).startswith("score")
