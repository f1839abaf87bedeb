"""The engine's memory, measured in a fresh process: a script's prelude and the run that prints its last line."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.endpoint.clients import AUTH, REGION

#: The start of a script that measures the engine's memory in a fresh process: ``engine`` (no HTTP
#: server), ``call(op, params, weak=None)`` that asserts a 200, ``rss()`` after a collection, and
#: the table ``mem`` keyed ``PK`` (S). A test adds what it measures and prints it last.
MEMORY_PRELUDE = (
    f"AUTH = {AUTH.format(region=REGION)!r}\n"
    + r"""
import gc, json, os
from labkit.embedded import build_engine

engine = build_engine()

def call(op, params, weak=None):
    headers = {"x-amz-target": "DynamoDB_20120810." + op, "authorization": AUTH}
    if weak:
        headers["x-labkit-weak-answer"] = weak
    status, _, body = engine.handle(headers, json.dumps(params).encode())
    assert status == 200, body

def rss():
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

call("CreateTable", {"TableName": "mem", "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}],
                     "AttributeDefinitions": [{"AttributeName": "PK", "AttributeType": "S"}],
                     "BillingMode": "PAY_PER_REQUEST"})
"""
)


def measure_memory(script: str, **env: str) -> str:
    """Run :data:`MEMORY_PRELUDE` + ``script`` in a fresh Python with ``env`` added; its last line of output."""
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_PRELUDE + script],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]
