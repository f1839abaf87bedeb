"""Unique-field configuration is checked before any call."""

from __future__ import annotations

import pytest

from labkit import uniqueness as u
from labkit.errors import (
    ValidationError,
)


def test_check_fields__shared_namespace__raises_validation_error() -> None:
    """Two fields cannot share a namespace: their markers would collide with each other."""
    with pytest.raises(ValidationError, match="share namespace 'EMAIL'"):
        u.check_fields({"email": "EMAIL", "backup_email": "EMAIL"})
