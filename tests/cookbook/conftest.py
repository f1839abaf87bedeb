"""The recipe tests' fixture: ``sdk``, a service-like client. What the test files import (the faults, the client,
an actor's outcome, run tokens) is in exploration.py beside this one."""

from __future__ import annotations

from typing import Any

import pytest

from labkit.shared.backend import Connection
from tests.cookbook.exploration import service_client


@pytest.fixture
def sdk(tconn: Connection) -> Any:
    """A service-like client (``recipes.client``) on the test's endpoint."""
    return service_client(tconn)
