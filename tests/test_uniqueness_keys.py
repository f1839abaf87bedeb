"""Unique-field configuration is checked before any call."""

from __future__ import annotations

from typing import Any

import pytest

from labkit import uniqueness as u
from labkit.errors import (
    ValidationError,
)


def test_check_fields__shared_namespace__raises_validation_error() -> None:
    """Two fields cannot share a namespace: their markers would collide with each other."""
    with pytest.raises(ValidationError, match="share namespace 'EMAIL'"):
        u.check_fields({"email": "EMAIL", "backup_email": "EMAIL"})


@pytest.mark.parametrize(
    "parts",
    [["acme", "ada@x.io"], ["a#b", "c@x.io"], ["a", "b#c@x.io"], ["a\\", "#b"], ["a\\#", "b"], ["", ""]],
)
def test_join_parts__hash_or_backslash_in_a_part__escaped_and_split_back(parts: list[str]) -> None:
    """The composite separator '#' is escaped inside parts, so joining is reversible."""
    assert u.split_parts(u.join_parts(parts)) == parts


def test_join_parts__tuples_that_differ__never_give_the_same_marker_value() -> None:
    """('a#b', 'c') and ('a', 'b#c') would both be 'a#b#c' without escaping."""
    assert u.join_parts(["a#b", "c@x.io"]) != u.join_parts(["a", "b#c@x.io"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({("email",): "X"}, "two or more"),
        ({("email", "email"): "X"}, "two or more different"),
        ({("tenant", "PK"): "X"}, "reserved"),
        ({("tenant", "a+b"): "X"}, "no '\\+'"),
        ({("tenant", "email"): "tenant"}, "upper-case"),
    ],
)
def test_check_fields__bad_composite__raises_validation_error(fields: dict[Any, str], message: str) -> None:
    """A composite needs two or more different, allowed attribute names and its own namespace."""
    with pytest.raises(ValidationError, match=message):
        u.check_fields(fields)
