"""Item sizes and capacity units follow DynamoDB's documented rules."""

from __future__ import annotations

import pytest

from labkit.shared.capacity import item_size, python_item_size, read_units, total_read_units, write_units


def test_item_size__strings__count_name_and_utf8_bytes() -> None:
    """A string attribute costs its name's bytes plus the value's UTF-8 bytes."""
    assert item_size({"PK": {"S": "SETTINGS#APP"}}) == 2 + 12
    assert item_size({"n": {"S": "ü"}}) == 1 + 2


@pytest.mark.parametrize(("number", "size"), [("1", 2), ("12", 2), ("123", 3), ("-1000", 2), ("0.001", 2)])
def test_item_size__numbers__one_byte_per_two_significant_digits_plus_one(number: str, size: int) -> None:
    """Numbers: leading/trailing zeros trimmed, then (digits + 1) // 2 + 1 bytes."""
    assert item_size({"": {"N": number}}) == size


def test_item_size__containers__three_bytes_plus_one_per_element() -> None:
    """Lists and maps: 3 bytes overhead and 1 byte per element, plus the elements (map keys count)."""
    assert item_size({"l": {"L": [{"S": "ab"}, {"BOOL": True}]}}) == 1 + 3 + (1 + 2) + (1 + 1)
    assert item_size({"m": {"M": {"k": {"NULL": True}}}}) == 1 + 3 + (1 + 1 + 1)


def test_python_item_size__matches_wire_form() -> None:
    """Plain Python values are measured after boto3's TypeSerializer."""
    assert python_item_size({"PK": "SETTINGS#APP", "on": True}) == 14 + 2 + 1


@pytest.mark.parametrize(
    ("size", "consistent", "units"),
    [(1, False, 0.5), (4096, False, 0.5), (4097, False, 1.0), (4096, True, 1.0), (4097, True, 2.0), (0, True, 1.0)],
)
def test_read_units__4kb_steps_half_for_eventual(size: int, consistent: bool, units: float) -> None:
    """Reads cost one unit per started 4 KB strongly consistent, half that eventually consistent."""
    assert read_units(size, consistent=consistent) == units


@pytest.mark.parametrize(("size", "transactional", "units"), [(1, False, 1.0), (1025, False, 2.0), (1025, True, 4.0)])
def test_write_units__1kb_steps_double_in_transactions(size: int, transactional: bool, units: float) -> None:
    """Writes cost one unit per started 1 KB, twice inside a transaction."""
    assert write_units(size, transactional=transactional) == units


def test_total_read_units__query_rounds_the_total_not_each_item() -> None:
    """Query/Scan: 3000 items of 100 bytes are 300,000 bytes -> 74 strongly consistent units, not 3000."""
    assert total_read_units([100] * 3000, consistent=True) == 74.0
    assert total_read_units([100] * 3000) == 37.0
