"""``labkit serve --faults PATH`` run for real, and a plain boto3 client of it (as the AWS CLI makes one)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config


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
