"""The fault tests' fixture: ``no_faults``. The helpers the test files import are modules beside this one:
support.py (items, clients, actors) and served.py (``labkit serve --faults`` run for real)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from labkit.engine_plugins.faults import (
    set_endpoint_faults,
)
from labkit.shared.backend import Connection


@pytest.fixture
def no_faults(tconn: Connection) -> Iterator[Connection]:
    """The embedded endpoint with no fault rules before and after the test."""
    set_endpoint_faults(tconn, None)
    yield tconn
    set_endpoint_faults(tconn, None)
