"""ClientRequestToken memory, scoped as DynamoDB scopes it: per account and region, for 10 minutes.

A TransactWriteItems that succeeded with a token is remembered by (account, region, token)
with a hash of the request. The memory is bounded: expired entries go first, and past
``capacity`` entries the oldest are forgotten.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...shared import constants as C

Scope = tuple[str, str, str]  # account, region, token


def fingerprint(params: Mapping[str, Any]) -> str:
    """What must match for a repeated ClientRequestToken to count as the same request."""
    ignored = {"ClientRequestToken", "ReturnConsumedCapacity"}
    text = json.dumps({k: v for k, v in params.items() if k not in ignored}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Remembered:
    """A TransactWriteItems that succeeded with a ClientRequestToken."""

    fingerprint: str
    completed_at: float
    keys: tuple[tuple[str, str], ...]  # (table name, JSON of the key) per action


class TokenMemory:
    """Successful TransactWriteItems by (account, region, token), for DynamoDB's 10 minutes."""

    def __init__(
        self,
        clock: Callable[[], float],
        ttl_seconds: float = C.CLIENT_REQUEST_TOKEN_TTL_SECONDS,
        capacity: int = C.MAX_REMEMBERED_TOKENS,
    ) -> None:
        self.clock = clock
        self.ttl_seconds = ttl_seconds
        self.capacity = capacity
        self._seen: OrderedDict[Scope, Remembered] = OrderedDict()

    def _forget_expired(self) -> None:
        now = self.clock()
        while self._seen:
            scope, entry = next(iter(self._seen.items()))
            if now - entry.completed_at < self.ttl_seconds and len(self._seen) <= self.capacity:
                break
            del self._seen[scope]

    def recall(self, scope: Scope) -> Remembered | None:
        """The earlier request with this token in this account and region, if less than the TTL ago."""
        self._forget_expired()
        entry = self._seen.get(scope)
        if entry is not None and self.clock() - entry.completed_at >= self.ttl_seconds:
            return None
        return entry

    def remember(self, scope: Scope, print_: str, keys: tuple[tuple[str, str], ...]) -> None:
        """Record a successful request; its window starts now."""
        self._seen.pop(scope, None)
        self._seen[scope] = Remembered(print_, self.clock(), keys)
        self._forget_expired()

    def __len__(self) -> int:
        return len(self._seen)


__all__ = ["Remembered", "TokenMemory", "fingerprint"]
