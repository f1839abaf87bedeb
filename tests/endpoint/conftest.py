"""The engine's fixtures (tests/endpoint/ and its folders, one per room of labkit/endpoint/): ``endpoint``
(one embedded endpoint per test module), ``client`` (a raw client of it), ``clock`` (a fake clock), ``lab``
(a connection to it with a fresh lab table) and ``racy``; a module that needs another endpoint (a fake clock,
short timeouts) defines its own ``endpoint``.

The helpers the test files import are modules beside this one: clients.py (raw clients, a raw POST, the
engine's headers, error codes), tables.py (``make_table``, ``scan_all``, ``key``...), fake_clock.py,
fuzz_settings.py (the ``labkit-ci`` hypothesis profile) and memory_probe.py."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import labkit
from labkit.embedded import start_endpoint
from labkit.endpoint import EmbeddedEndpoint
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from tests.endpoint.clients import raw_client
from tests.endpoint.fake_clock import FakeClock


@pytest.fixture(scope="module")
def endpoint() -> Iterator[EmbeddedEndpoint]:
    with start_endpoint() as ep:
        yield ep


@pytest.fixture(scope="module")
def client(endpoint: EmbeddedEndpoint) -> Any:
    return raw_client(endpoint.url)


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    """The module's fake clock (for a module whose ``endpoint`` runs on it)."""
    return FakeClock()


@pytest.fixture
def lab(endpoint: EmbeddedEndpoint) -> Iterator[Connection]:
    """A connection to the module's endpoint whose lab table is fresh and empty."""
    name = f"labkit-ep-{uuid.uuid4().hex[:10]}"
    conn = Connection("embedded", endpoint.url, C.LOCAL_REGION, name)
    labkit.ensure_table(conn, name)
    yield conn
    labkit.delete_table(conn, name)


@pytest.fixture
def racy() -> Iterator[None]:
    """Switch threads every 0.1 ms in this process, so an unlocked check-then-write would lose."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(before)
