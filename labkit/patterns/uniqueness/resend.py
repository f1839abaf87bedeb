"""Pinned-token resends: remember a request sent with a caller's ClientRequestToken.

``change_value`` and ``delete_account`` read the account before they build their
transaction. After a lost answer the account has already changed, so rebuilding the request
would make a *different* one (or find nothing to delete). When the caller pins a token, the
request is remembered here for DynamoDB's token window; a retry with the same token and the
same arguments resends the identical request, which DynamoDB answers with the first
outcome instead of applying it twice. Remembered per process, which is where a retry after
a lost answer happens.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ...shared import constants as C
from .reasons import Slot, transact

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")

#: How many pinned-token requests a process remembers at most.
MAX_REMEMBERED = 1024


@dataclass(frozen=True)
class Prepared(Generic[T]):
    """One transaction ready to send (or resend): actions, what each means, what it returns."""

    actions: list[dict[str, Any]]
    slots: list[Slot]
    what: str
    result: T


class _Remembered:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._items: OrderedDict[Hashable, tuple[float, Prepared[Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self.clock = clock

    def get(self, key: Hashable) -> Prepared[Any] | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is None or self.clock() - entry[0] > C.CLIENT_REQUEST_TOKEN_TTL_SECONDS:
                return None
            return entry[1]

    def put(self, key: Hashable, prepared: Prepared[Any]) -> None:
        with self._lock:
            self._items[key] = (self.clock(), prepared)
            while len(self._items) > MAX_REMEMBERED:
                self._items.popitem(last=False)


_REMEMBERED = _Remembered()


def send_once(
    client: DynamoDBClient,
    key: Hashable,
    token: str,
    pinned: bool,
    prepare: Callable[[], Prepared[T] | T],
) -> T:
    """Send what ``prepare()`` builds with ``token`` — or, for a pinned token seen before with the
    same ``key``, resend the identical request. ``prepare`` may return a plain result
    (nothing to send, e.g. the value is already held)."""
    remembered = _REMEMBERED.get(key) if pinned else None
    prepared = remembered if remembered is not None else prepare()
    if not isinstance(prepared, Prepared):
        return prepared
    if pinned:
        _REMEMBERED.put(key, prepared)
    transact(client, prepared.actions, prepared.slots, token, prepared.what)
    result: T = prepared.result
    return result


__all__ = ["MAX_REMEMBERED", "Prepared", "send_once"]
