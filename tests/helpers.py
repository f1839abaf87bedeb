"""Helpers test files import (fixtures live in conftest.py): a team's code, and the repository's tools/ scripts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
