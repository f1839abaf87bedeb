"""Fault injection for the lesson: lose a response after DynamoDB applied the request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ConnectionClosedError

from ...shared.catalogue import Op

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def lose_next_response(client: DynamoDBClient, operation: str = Op.TRANSACT_WRITE_ITEMS) -> None:
    """Drop the answer to this client's next ``operation`` after DynamoDB has applied it.

    The request really reaches DynamoDB and really takes effect; only the response never
    reaches the caller, who sees botocore's ``ConnectionClosedError`` — as after a network
    blip. That is the moment a retry must not register the account twice.
    """
    event = f"after-call.dynamodb.{operation}"
    fired = False

    def drop(**_: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        client.meta.events.unregister(event, drop)
        raise ConnectionClosedError(endpoint_url=client.meta.endpoint_url)

    client.meta.events.register(event, drop)


__all__ = ["lose_next_response"]
