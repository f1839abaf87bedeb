"""A TransactionConflict: detected in plain boto3, retried with the same request, boundedly.

DynamoDB gives a conflict two names (labkit wraps both as its ``TransactionConflict``):

* ``TransactionCanceledException`` with the reason ``TransactionConflict`` at an action's slot: a
  *transaction* met another request on that item; nothing was written;
* ``TransactionConflictException``: a *single-item* write (PutItem, UpdateItem, DeleteItem) met an
  item a transaction was writing; nothing was written.

botocore never retries either (they are answers). Retry by resending **the same request** (same
ClientRequestToken), after a jittered backoff, a bounded number of times; then raise — never
return as if it had worked. A collision in time usually clears; a cancellation for any other
reason (a failed condition) is an answer to read, not to retry.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError


class ConflictRetriesExhausted(Exception):
    """Every attempt met a conflict; nothing was written."""


def is_conflict(exc: BaseException) -> bool:
    """Whether a botocore error is a transaction conflict (either name)."""
    if not isinstance(exc, ClientError):
        return False
    code = exc.response["Error"]["Code"]
    reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
    return code == "TransactionConflictException" or (
        code == "TransactionCanceledException" and "TransactionConflict" in reasons
    )


def retry_conflicts(send: Callable[[], Any], *, attempts: int = 3, base_delay: float = 0.05) -> Any:
    """``send()`` (which resends the same request each time) until it does not meet a conflict."""
    attempt = 1
    while True:
        try:
            return send()
        except ClientError as exc:
            if not is_conflict(exc):
                raise
            if attempt >= attempts:
                raise ConflictRetriesExhausted(f"{attempt} attempts met a transaction conflict") from exc
        time.sleep(random.uniform(0, base_delay * 2**attempt))  # full jitter; none after the last attempt
        attempt += 1
