"""How the recipe tests explore a recipe: the faults every recipe is explored with, a client like a service's, an
actor's outcome, and each run's tokens.

Each recipe in ``recipes/`` is explored by the race lab (``labkit.races.explore``) with two or three
callers, in every order of their DynamoDB calls (or every non-equivalent one), once with no fault and
once with each fault of :data:`FAULTS` at each call point; its broken variant (written in the test,
never in ``recipes/``) must be caught the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from labkit.races.scenarios import EXPLORE_FAULTS
from labkit.shared import constants as C
from labkit.shared.backend import Connection
from recipes.client import dynamodb_client

#: DynamoDB's weak answers (issue 26): an eventually consistent read answered as of before the most
#: recent write, a batch that leaves its last item in UnprocessedItems / UnprocessedKeys, a Query or
#: Scan page that stops after one item with a LastEvaluatedKey. THIS is the place they join the
#: explorations: every recipe test runs with them, each placed only where DynamoDB can give it. The
#: recipes handle these answers (ConsistentRead where a read decides, batch leftovers sent again,
#: every page of a Query).
WEAK_ANSWERS = ("stale-read", "unprocessed-items", "short-page")
FAULTS = ["lose-response", "transaction-conflict", *(f for f in WEAK_ANSWERS if f in EXPLORE_FAULTS)]


def service_client(conn: Connection) -> Any:
    """The recipe's client (``recipes/client.py``: standard retries, timeouts) on the lab's endpoint.

    An actor of no arguments that uses it keeps botocore's retries, as a service does: a lost answer
    is first resent by botocore within the same call.
    """
    return dynamodb_client(
        endpoint_url=conn.endpoint_url,
        region_name=conn.region,
        aws_access_key_id=C.LOCAL_ACCESS_KEY,
        aws_secret_access_key=C.LOCAL_SECRET_KEY,
    )


def outcome(call: Callable[[], Any], *errors: type[BaseException]) -> Any:
    """``call()``'s result, or the exception it raised if it is one of the recipe's own ``errors``.

    The race lab counts only DynamoDB's (and labkit's) errors as an actor's outcome; a recipe imports
    nothing from labkit, so its own exceptions (``RetriesExhausted``...) come back as results here.
    """
    try:
        return call()
    except errors as exc:
        return exc


class Runs:
    """Numbers the runs of an exploration (``setup`` calls :meth:`next`) and makes tokens for them.

    DynamoDB remembers a ClientRequestToken for 10 minutes, so a token reused by the next run (or by
    another test on the same endpoint) would be answered from the previous one: each run's tokens are
    new, and the same actor gets the same token for the whole run (a resend is the same request).
    """

    def __init__(self) -> None:
        self.prefix, self.number = uuid.uuid4().hex[:12], 0

    def next(self) -> None:
        self.number += 1

    def token(self, actor: str) -> str:
        return f"{self.prefix}-{self.number}-{actor}"
