"""Helpers shared by the test files of faults/."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from labkit.engine_plugins.faults import (
    set_endpoint_faults,
)
from labkit.patterns import uniqueness as U
from labkit.shared.backend import Connection

CONFLICT = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}


def item(pk: str, **attrs: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": "X"}, **{k: {"S": v} for k, v in attrs.items()}}


def get(conn: Connection, pk: str) -> dict[str, Any] | None:
    out = conn.client.get_item(TableName=conn.table_name, Key={"PK": {"S": pk}, "SK": {"S": "X"}}, ConsistentRead=True)
    return out.get("Item")


def signup(table: str, email: str, username: str) -> Callable[[Any], str]:
    def actor(client: Any) -> str:
        return U.register(client, table, email=email, username=username).account_id

    return actor


def injected(res: Any) -> list[str]:
    return [v if isinstance(v, str) else "" for v in res.history["injected"]]


@pytest.fixture
def no_faults(tconn: Connection) -> Iterator[Connection]:
    """The embedded endpoint with no fault rules before and after the test."""
    set_endpoint_faults(tconn, None)
    yield tconn
    set_endpoint_faults(tconn, None)


def client(conn: Connection, attempts: int = 1, mode: str = "standard") -> Any:
    return conn.new_client(retries={"total_max_attempts": attempts, "mode": mode})


@contextlib.contextmanager
def serve_with_faults(path: Path, rules: int = 1) -> Iterator[str]:
    """``labkit serve --faults PATH`` started for real on a free loopback port (no LABKIT_* variables):
    its URL once it said it read ``rules`` rule(s) and listens; stopped after the block."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "labkit", "serve", "--port", str(port), "--faults", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert f"({rules} rule(s)" in proc.stdout.readline()
        assert "listening on" in proc.stdout.readline()
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # SIGTERM ends serve at once (decision 155); 60 s guards a hang only


def plain_table(url: str, table: str, attempts: int | None = None) -> Any:
    """A plain boto3 client of ``url``, as the AWS CLI makes one (dummy keys, botocore's retries unless
    ``attempts`` is given), with its table ``table`` keyed PK (S) made first (control plane: never faulted)."""
    aws = boto3.client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": attempts}) if attempts is not None else None,
    )
    aws.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return aws
