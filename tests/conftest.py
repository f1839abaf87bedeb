"""Shared fixtures: a connection to the embedded endpoint and a fresh table per test.

Set LABKIT_TEST_BACKEND=local (DynamoDB Local) or =aws to run the tests marked
``aws_verified`` against that backend instead; everything else stays embedded.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

import labkit
from labkit.shared.backend import Connection

# Fixtures live here; helpers that test files import live in modules (tests/helpers.py, a folder's own
# module such as tests/plugin/teams.py), never in a conftest.py.


@pytest.fixture(scope="session")
def conn() -> Connection:
    """The embedded endpoint (or LABKIT_TEST_BACKEND's backend), connected once per session."""
    return labkit.connect(os.environ.get("LABKIT_TEST_BACKEND") or "embedded")


@pytest.fixture
def table(conn: Connection) -> Iterator[str]:
    """A fresh, empty lab table with a unique name; deleted afterwards."""
    name = f"labkit-test-{uuid.uuid4().hex[:10]}"
    labkit.ensure_table(conn, name)
    yield name
    labkit.delete_table(conn, name)


@pytest.fixture
def tconn(conn: Connection, table: str) -> Connection:
    """A connection whose default table is the fresh per-test table."""
    return Connection(conn.backend, conn.endpoint_url, conn.region, table)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    target = os.environ.get("LABKIT_TEST_BACKEND")
    if target:
        skip = pytest.mark.skip(reason=f"LABKIT_TEST_BACKEND={target}: only aws_verified tests run")
        for item in items:
            if "aws_verified" not in item.keywords and item.fspath.ext == ".py":
                item.add_marker(skip)
