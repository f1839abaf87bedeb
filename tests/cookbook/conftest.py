"""Fixtures of the recipe tests (what they share: recipe_support)."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.backend import Connection

from .recipe_support import service_client


@pytest.fixture
def sdk(tconn: Connection) -> Any:
    """A service-like client (``recipes.client``) on the test's endpoint."""
    return service_client(tconn)
