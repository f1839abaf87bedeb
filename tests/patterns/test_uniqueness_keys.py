"""Unique-field configuration is checked before any call."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.patterns import uniqueness as u
from labkit.shared.errors import (
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


def test_equals_params__values_and_a_missing_one__readable_placeholders_as_written_by_hand() -> None:
    """``#email = :email AND attribute_not_exists(#tenant)``, led by ``first``; names and typed values."""
    from labkit.patterns.uniqueness.keys import equals_params

    assert equals_params({"email": "ada@x.io", "tenant": None}, first="attribute_exists(PK)") == {
        "ConditionExpression": "attribute_exists(PK) AND #email = :email AND attribute_not_exists(#tenant)",
        "ExpressionAttributeNames": {"#email": "email", "#tenant": "tenant"},
        "ExpressionAttributeValues": {":email": {"S": "ada@x.io"}},
    }
    assert equals_params({}, first="attribute_exists(PK)") == {"ConditionExpression": "attribute_exists(PK)"}


def test_placeholder__other_characters_and_clashes__still_valid_and_distinct() -> None:
    """DynamoDB placeholders are letters, digits and _; a name that maps onto a taken one gets a number."""
    from labkit.patterns.uniqueness.keys import equals_params, placeholder

    assert placeholder("#", "e-mail", {}) == "#e_mail"
    assert placeholder("#", "e-mail", {"#e_mail": 1}) == "#e_mail1"
    both = equals_params({"e-mail": "a@x.io", "e_mail": "b@x.io"})
    assert both["ConditionExpression"] == "#e_mail = :e_mail AND #e_mail1 = :e_mail1"
    assert both["ExpressionAttributeNames"] == {"#e_mail": "e-mail", "#e_mail1": "e_mail"}
