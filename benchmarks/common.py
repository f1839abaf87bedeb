"""What the benchmarks share: a client that never retries, the one-key table they measure on, the
command line and lab table of a benchmark that races on a labkit backend.

Importing it puts the repository's root on ``sys.path``: a benchmark races the same scenarios as
the tests (``tests/races/counters.py``) when run as ``python benchmarks/NAME.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

import labkit

REGION = "us-east-1"
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))


def client(url: str | None, pool: int = 10) -> Any:
    """A boto3 DynamoDB client with dummy credentials that never retries (no endpoint: in-process moto)."""
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name=REGION,
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
        config=Config(max_pool_connections=pool, retries={"mode": "standard", "max_attempts": 1}),
    )


def create_hash_table(c: Any, table: str) -> None:
    """A PAY_PER_REQUEST table keyed ``PK`` (S) alone."""
    c.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def arguments(doc: str) -> argparse.ArgumentParser:
    """A racing benchmark's command line: its docstring's first line, and ``--backend`` (embedded)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--backend", default="embedded", help="embedded, local or aws, as labkit.connect takes it")
    return parser


def lab_table(backend: str, name: str) -> labkit.Connection:
    """A connection to ``backend`` with its lab table ``name`` made (the caller deletes it)."""
    conn = labkit.connect(backend, table_name=name)
    labkit.ensure_table(conn)
    return conn
