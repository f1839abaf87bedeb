"""labkit.shared.validation: each check accepts what it should, and refuses the rest with one message shape."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pytest

from labkit.shared.errors import ValidationError
from labkit.shared.validation import (
    check_callable,
    check_choice,
    check_columns,
    check_fraction,
    check_int,
    check_non_negative,
    check_positive,
    check_text,
)


@pytest.mark.parametrize(
    ("kwargs", "value", "message"),
    [
        ({}, "3", "n must be an int, not '3'"),
        ({}, True, "n must be an int, not True"),
        ({}, 2.0, "n must be an int, not 2.0"),
        ({"least": 1}, 0, "n must be an int >= 1, not 0"),
        ({"most": 5}, 6, "n must be an int <= 5, not 6"),
        ({"least": 1, "most": 5}, 9, "n must be an int from 1 to 5, not 9"),
        ({"least": 1, "hint": "give one or more"}, -2, "n must be an int >= 1, not -2; give one or more"),
    ],
)
def test_check_int__outside_the_rule__one_message_shape(kwargs: dict[str, Any], value: Any, message: str) -> None:
    """A bool, a float, a string or an int out of range is refused, naming the rule and the value."""
    with pytest.raises(ValidationError) as info:
        check_int("n", value, **kwargs)
    assert str(info.value) == message


def test_check_int__inside_the_rule__returns_the_value() -> None:
    """The bounds are inclusive; the accepted int is returned."""
    assert check_int("n", 1, least=1, most=1) == 1
    assert check_int("n", -7) == -7


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, True, "5", None])
def test_check_positive__not_a_positive_finite_number__refused(value: Any) -> None:
    """0, negatives, NaN, infinity, bools and strings are not a positive number of seconds."""
    with pytest.raises(ValidationError, match=r"^timeout must be a positive number of seconds, not "):
        check_positive("timeout", value)


def test_check_positive__unit_and_hint__in_the_message() -> None:
    """The unit names what is counted; the hint says what to do."""
    with pytest.raises(ValidationError) as info:
        check_positive("rate", 0, "writes per second", hint="e.g. 500")
    assert str(info.value) == "rate must be a positive number of writes per second, not 0; e.g. 500"
    assert check_positive("timeout", 2) == 2.0


def test_check_non_negative__zero_passes_below_zero_fails() -> None:
    """0 is allowed (it turns a wait or a cache off); a negative number is not."""
    assert check_non_negative("ttl", 0) == 0.0
    with pytest.raises(ValidationError) as info:
        check_non_negative("ttl", -1)
    assert str(info.value) == "ttl must be a number of seconds >= 0, not -1"
    with pytest.raises(ValidationError) as info:
        check_non_negative("price", -0.5, "")
    assert str(info.value) == "price must be a number >= 0, not -0.5"


def test_check_fraction__zero_only_when_allowed() -> None:
    """(0, 1] by default; [0, 1] for a probability."""
    assert check_fraction("headroom", 1) == 1.0
    assert check_fraction("probability", 0, zero=True) == 0.0
    with pytest.raises(ValidationError) as info:
        check_fraction("headroom", 0)
    assert str(info.value) == "headroom must be a number in (0, 1], not 0"
    with pytest.raises(ValidationError) as info:
        check_fraction("probability", 1.5, zero=True)
    assert str(info.value) == "probability must be a number from 0 to 1, not 1.5"
    with pytest.raises(ValidationError):
        check_fraction("headroom", "half")


def test_check_text__blank_or_not_a_string__refused() -> None:
    """A string of spaces is as empty as no string."""
    assert check_text("name", "x") == "x"
    for value in ("", "   ", 3, None):
        with pytest.raises(ValidationError, match="^name must be a non-empty string, not "):
            check_text("name", value)


def test_check_callable__says_what_to_pass() -> None:
    """The message names the type given and what a caller should pass instead."""
    assert check_callable("setup", print, "a function of no arguments") is print
    assert check_callable("setup", None, "a function of no arguments", optional=True) is None
    with pytest.raises(ValidationError) as info:
        check_callable("invariant", "n == 3", "a function of one Interleaving")
    assert str(info.value) == "invariant is str, not a function of one Interleaving"
    with pytest.raises(ValidationError) as info:
        check_callable("setup", 3, "a function of no arguments", optional=True)
    assert str(info.value) == "setup is int, not a function of no arguments, or None"


def test_check_choice__lists_the_choices_in_order() -> None:
    """An unknown choice is named and every allowed one listed."""
    assert check_choice("strategy", "dpor", ("auto", "dpor")) == "dpor"
    with pytest.raises(ValidationError) as info:
        check_choice("strategy", "bfs", ("auto", "exhaustive", "dpor", "pct"))
    assert str(info.value) == "unknown strategy 'bfs'; choose one of: auto, exhaustive, dpor, pct"


def test_check_columns__names_what_is_missing_and_what_is_there() -> None:
    """A frame without a needed column is refused, listing the missing ones and the frame's columns."""
    check_columns("timeline", ["actor", "operation", "key"], ("actor", "operation"))
    with pytest.raises(ValidationError) as info:
        check_columns("timeline", ["order"], ("actor", "operation"), hint="pass res.history")
    assert (
        str(info.value)
        == "timeline needs the column(s) 'actor', 'operation'; the frame has ['order']; pass res.history"
    )


def test_validation__a_floor_module__imports_only_labkit_errors() -> None:
    """labkit/shared/validation.py may be imported from anywhere in labkit: it imports only labkit.shared.errors."""
    path = Path(__file__).resolve().parents[2] / "labkit" / "shared" / "validation.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    internal = sorted(
        f"{'.' * node.level}{node.module or ''}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("labkit"))
    )
    assert internal == [".errors"]
