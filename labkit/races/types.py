"""Types shared by the race lab: an actor and a stress operation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


#: ``fn(client)`` (handed the lab's client) or ``fn()`` (it uses its own clients, resources, models).
Actor = Callable[..., Any]
#: ``op(client, worker, seq)``: one unit of a stress run's work (not the catalogue's ``Op``: an operation's name).
StressOp = Callable[["DynamoDBClient", int, int], Any]


__all__ = ["Actor", "StressOp"]
