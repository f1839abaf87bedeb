"""A DynamoDB client for a service: botocore's standard retries and timeouts that fail fast.

``standard`` mode retries throttling, 5xx answers and lost answers (a read timeout, a dropped
connection) up to ``total_max_attempts`` in all, with full-jitter backoff; it never retries a
``TransactionConflict`` or a refused condition, which are answers (``conflicts.py``). A lost answer
may mean the request was applied: botocore's resend of an idempotent request is safe (a
TransactWriteItems keeps its ClientRequestToken), a resend of an ADD counts twice
(``sharded_counter.py``), a resend of a guarded write meets its own write (``guarded_update.py``).
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 3},  # 1 call + 2 retries, jittered
    connect_timeout=2,  # seconds to open a connection: nothing was sent yet
    read_timeout=5,  # seconds to wait for the answer: after that the request MAY have been applied
    tcp_keepalive=True,
    max_pool_connections=25,  # as many as the threads that share this client
)


def dynamodb_client(**kwargs: Any) -> Any:
    """A low-level DynamoDB client with :data:`CONFIG` (kwargs: region_name, endpoint_url, ...)."""
    return boto3.client("dynamodb", config=CONFIG, **kwargs)
