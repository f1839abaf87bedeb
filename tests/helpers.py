"""Helpers test files import (fixtures live in conftest.py): a team's code, the repository's tools/ scripts, a
table keyed as team code keys one, boto3's resource Table of a lab's table, the differential checks' hypothesis
settings, a race-lab run's setup in one batch, and busy loops that saturate the CPU."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis import settings

    from labkit.shared.backend import Connection

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


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """``count`` shell busy loops for the block's duration, each killed by its own handle after."""
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def hash_key_table(client: Any, prefix: str, key: str) -> Iterator[str]:
    """A PAY_PER_REQUEST table ``labkit-<prefix>-<8 hex digits>`` keyed ``key`` (S) alone; deleted after."""
    name = f"labkit-{prefix}-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield name
    finally:
        client.delete_table(TableName=name)


def derandomized(variable: str, default: int) -> settings:
    """Hypothesis settings for a differential check of the race lab: ``$variable`` examples (else ``default``),
    derandomized (a CI failure replays locally), no deadline, no example database, and none of the health
    checks a lab's programs trip (slow, large, a module's fixture reused)."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=int(os.environ.get(variable, default)),
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    )


def reset_items(client: Any, tables: Mapping[str, Sequence[tuple[dict[str, Any], dict[str, Any] | None]]]) -> None:
    """Each table's ``(key, item)`` pairs put back as ``item``, or deleted where ``item`` is None: one
    BatchWriteItem over every table (a race-lab run's setup: one call, not one per item); none left unprocessed."""
    requests = {
        table: [
            {"DeleteRequest": {"Key": key}} if item is None else {"PutRequest": {"Item": item}} for key, item in pairs
        ]
        for table, pairs in tables.items()
    }
    left = client.batch_write_item(RequestItems=requests)["UnprocessedItems"]
    assert not left, f"the setup's batch was not all processed: {left}"


def resource_table(conn: Connection) -> Any:
    """boto3's resource ``Table`` of the connection's table (its own session, labkit's dummy keys), as team code
    makes one (``batch_writer`` code, a table made at import time)."""
    import boto3

    from labkit.shared import constants as C

    resource = boto3.session.Session().resource(
        "dynamodb",
        endpoint_url=conn.endpoint_url,
        region_name=conn.region,
        aws_access_key_id=C.LOCAL_ACCESS_KEY,
        aws_secret_access_key=C.LOCAL_SECRET_KEY,
    )
    return resource.Table(conn.table_name)
