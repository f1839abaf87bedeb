"""The settings item's declared flags: types, names and fail-closed defaults."""

from __future__ import annotations

import pytest

from labkit.patterns.singleton import (
    DEFAULT_SCHEMA,
    Flag,
    FlagSchema,
)
from labkit.shared.errors import (
    FlagTypeError,
    ValidationError,
)
from tests.patterns.flags import SAFE


def test_schema__bool_flag__rejects_int_and_int_flag_rejects_bool() -> None:
    """bool is a subclass of int in Python; neither passes for the other."""
    with pytest.raises(FlagTypeError):
        DEFAULT_SCHEMA.validate({"signup_enabled": 1})
    with pytest.raises(FlagTypeError):
        DEFAULT_SCHEMA.validate({"rate_limit_per_minute": True})
    assert DEFAULT_SCHEMA.validate({"rate_limit_per_minute": 120}) == {"rate_limit_per_minute": 120}


def test_schema__wrong_type__message_names_the_type_with_its_article() -> None:
    """The type comes with its article ("takes an int", "takes a bool"), never "a int"."""
    with pytest.raises(
        FlagTypeError, match=r"'rate_limit_per_minute' takes an int, got bool True; nothing was written"
    ):
        DEFAULT_SCHEMA.validate({"rate_limit_per_minute": True})
    with pytest.raises(FlagTypeError, match=r"'signup_enabled' takes a bool, got int 1"):
        DEFAULT_SCHEMA.validate({"signup_enabled": 1})
    with pytest.raises(FlagTypeError, match=r"safe_default 'x' is not an int$"):
        Flag("a", int, "x")


def test_schema__reserved_or_duplicate_names__refused() -> None:
    """A flag may not be called PK, SK or version, nor be declared twice."""
    with pytest.raises(ValidationError, match="reserved"):
        Flag("version", int, 0)
    with pytest.raises(ValidationError, match="declared twice"):
        FlagSchema((Flag("a", bool, False), Flag("a", bool, True)))
    with pytest.raises(FlagTypeError):
        Flag("a", bool, 0)


def test_schema__defaults__fail_closed() -> None:
    """Features off, maintenance on, conservative rate limit."""
    assert DEFAULT_SCHEMA.defaults() == SAFE
