"""What DynamoDB enforces that moto lets through: request checks and ClientRequestToken memory.

Private to :mod:`labkit.endpoint`. ``check_request`` runs before anything is
applied (a rejected request writes nothing); :class:`TokenMemory` is used
under the endpoint's lock.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import constants as C

_NAME_PLACEHOLDER = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_PLACEHOLDER = re.compile(r":[A-Za-z0-9_]+")
_EXPRESSIONS = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "FilterExpression",
    "KeyConditionExpression",
)
_SINGLE_SCOPE = {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan"}
_TRANSACT = {"TransactWriteItems", "TransactGetItems"}


def _check_placeholders(scope: Mapping[str, Any]) -> str | None:
    """DynamoDB rejects placeholders that no expression of the request (or action) uses."""
    expressions = [scope[f] for f in _EXPRESSIONS if isinstance(scope.get(f), str)]
    for label, pattern in (("Names", _NAME_PLACEHOLDER), ("Values", _VALUE_PLACEHOLDER)):
        given = scope.get(f"ExpressionAttribute{label}")
        if not isinstance(given, dict):
            continue  # absent, or malformed: moto reports the latter
        if not given:
            return f"ExpressionAttribute{label} must not be empty"
        if not expressions:
            return f"ExpressionAttribute{label} can only be specified when using expressions"
        used = {p for e in expressions for p in pattern.findall(e)}
        unused = [k for k in given if k not in used]
        if unused:
            return (
                f"Value provided in ExpressionAttribute{label} unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )
    return None


def _check_transact_items(params: Mapping[str, Any]) -> str | None:
    items = params.get("TransactItems")
    if not isinstance(items, list):
        return None  # missing or malformed: moto reports it
    if not items:
        return (
            "1 validation error detected: Value '[]' at 'transactItems' failed to satisfy "
            "constraint: Member must have length greater than or equal to 1"
        )
    if len(items) > C.MAX_TRANSACT_ITEMS:
        return (
            "1 validation error detected: Value at 'transactItems' failed to satisfy "
            f"constraint: Member must have length less than or equal to {C.MAX_TRANSACT_ITEMS}"
        )
    for action in items:
        if isinstance(action, dict):
            for op in action.values():
                if isinstance(op, dict) and (problem := _check_placeholders(op)):
                    return problem
    return None


def _check_token(params: Mapping[str, Any]) -> str | None:
    token = params.get("ClientRequestToken")
    if token is None:
        return None
    if not isinstance(token, str) or not 1 <= len(token) <= C.MAX_CLIENT_REQUEST_TOKEN_LENGTH:
        return (
            f"1 validation error detected: Value '{token}' at 'clientRequestToken' failed to "
            "satisfy constraint: Member must have length less than or equal to "
            f"{C.MAX_CLIENT_REQUEST_TOKEN_LENGTH} and greater than or equal to 1"
        )
    return None


def check_request(operation: str, params: Mapping[str, Any]) -> str | None:
    """DynamoDB's ValidationException message for ``params``, or None if DynamoDB accepts it."""
    if operation in _SINGLE_SCOPE:
        return _check_placeholders(params)
    if operation in _TRANSACT:
        return _check_transact_items(params) or (
            _check_token(params) if operation == "TransactWriteItems" else None
        )
    if operation == "BatchGetItem":
        for request in (params.get("RequestItems") or {}).values():
            if isinstance(request, dict) and (problem := _check_placeholders(request)):
                return problem
    return None


def fingerprint(params: Mapping[str, Any]) -> str:
    """What must match for a repeated ClientRequestToken to count as the same request."""
    ignored = {"ClientRequestToken", "ReturnConsumedCapacity"}
    return json.dumps({k: v for k, v in params.items() if k not in ignored}, sort_keys=True)


@dataclass(frozen=True)
class Remembered:
    """A TransactWriteItems that succeeded with a ClientRequestToken."""

    fingerprint: str
    completed_at: float
    keys: tuple[tuple[str, str], ...]  # (table name, JSON of the key) per action


class TokenMemory:
    """Successful TransactWriteItems by ClientRequestToken, kept for DynamoDB's 10 minutes."""

    def __init__(
        self,
        clock: Callable[[], float],
        ttl_seconds: float = C.CLIENT_REQUEST_TOKEN_TTL_SECONDS,
    ) -> None:
        self.clock = clock
        self.ttl_seconds = ttl_seconds
        self._seen: OrderedDict[str, Remembered] = OrderedDict()

    def _forget_expired(self) -> None:
        now = self.clock()
        while self._seen:
            token, entry = next(iter(self._seen.items()))
            if now - entry.completed_at < self.ttl_seconds:
                break
            del self._seen[token]

    def recall(self, token: str) -> Remembered | None:
        """The earlier request with this token, if it completed less than the TTL ago."""
        self._forget_expired()
        entry = self._seen.get(token)
        if entry is not None and self.clock() - entry.completed_at >= self.ttl_seconds:
            return None
        return entry

    def remember(self, token: str, print_: str, keys: tuple[tuple[str, str], ...]) -> None:
        """Record a successful request; its window starts now."""
        self._seen.pop(token, None)
        self._seen[token] = Remembered(print_, self.clock(), keys)

    def __len__(self) -> int:
        return len(self._seen)
