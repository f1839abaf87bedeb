"""Shared fixtures: a connection to the embedded endpoint and a fresh table per test.

Set LABKIT_TEST_BACKEND=local (DynamoDB Local) or =aws to run the tests marked
``aws_verified`` against that backend instead; everything else stays embedded.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import labkit
from labkit.backend import Connection

# Helpers and fixtures shared by the test files of one folder live in that folder's conftest.py.

TOOLS = Path(__file__).resolve().parents[1] / "tools"


#: A team's own code, as its race test files begin (tests of the plugin and of the wheel append the tests):
#: loyalty points at one key, added by a read-modify-write (which loses an award to a concurrent one) or by
#: an atomic ADD (which never does).
TEAM_POINTS = """
from labkit.races import explore

KEY = {"PK": {"S": "USER#42"}, "SK": {"S": "POINTS"}}


def add_points_read_modify_write(client, table, points):
    item = client.get_item(TableName=table, Key=KEY, ConsistentRead=True)["Item"]
    client.put_item(TableName=table, Item={**KEY, "balance": {"N": str(int(item["balance"]["N"]) + points)}})


def add_points_atomic(client, table, points):
    client.update_item(TableName=table, Key=KEY, UpdateExpression="ADD balance :p",
                       ExpressionAttributeValues={":p": {"N": str(points)}})
"""


def load_tool(name: str) -> ModuleType:
    """``tools/<name>.py`` (scripts, not a package) as a module, loaded once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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
