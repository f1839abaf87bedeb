"""The settings item, read fail-closed and cached: one GetItem per process every ``ttl`` seconds.

``read()`` never raises. When DynamoDB cannot be asked (throttled, a 5xx, no network, a lost
answer, no table, no permission: botocore's ``ClientError`` and ``BotoCoreError``), the app runs
on :data:`DEFAULTS`, each the safe side of its flag, and the reason says why. After such a failure
the reader does not call DynamoDB again for ``retry_after`` seconds (a negative cache: a struggling
key is not hammered by every request); with ``stale_for`` > 0 it serves the last flags it read
while they are younger than ``ttl + stale_for`` (last known good), then the defaults. A missing
item is an answer, not a failure: the defaults, at once; it clears the last good flags (a deleted
item is never served stale) and is cached like an item, so while it is missing one GetItem is made
per ``ttl``, not one per request. A stored value of the wrong type (a fraction for an int flag
included) reads as its default. Reads
are eventually consistent (half the cost): flags may lag a change by about a second on top of the
TTL, which a cache tolerates anyway.

The client decides how long a request may wait for the flags: give it ``client.py``'s (connect
timeout 2 s, read timeout 5 s, botocore's standard retries, 3 attempts in all), never one with
the default 60-second read timeout, or a slow DynamoDB holds every request for a minute.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

KEY = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}
#: What the app runs on when the flags cannot be read: each default is the safe side.
DEFAULTS: dict[str, bool | int | str] = {
    "signup_enabled": False,  # a feature nobody confirmed stays off
    "maintenance_mode": True,  # cannot read the settings: do not pretend all is well
    "ai_search_enabled": False,
    "rate_limit_per_minute": 60,  # the conservative limit
    "banner_message": "",
}


class Flags(NamedTuple):
    values: dict[str, bool | int | str]
    source: str  # "item", "cache", "stale" or "defaults"
    reason: str = ""


def decode(item: Mapping[str, Any]) -> dict[str, bool | int | str]:
    """The flags of a stored item; a missing or wrongly typed attribute reads as its default."""
    flags = dict(DEFAULTS)
    for name, default in DEFAULTS.items():
        value = item.get(name, {})
        number = str(value.get("N", ""))  # an int flag takes whole numbers: a hand-edited 90.5 is a wrong type
        if isinstance(default, bool) and isinstance(value.get("BOOL"), bool):
            flags[name] = value["BOOL"]
        elif isinstance(default, int) and not isinstance(default, bool) and number.removeprefix("-").isdecimal():
            flags[name] = int(number)
        elif isinstance(default, str) and "S" in value:
            flags[name] = value["S"]
    return flags


class FlagReader:
    """One per process (it owns the cache); ``read()`` on every request, from any thread.

    A lock makes the threads of a process share one GetItem per ``ttl``: while one thread asks
    DynamoDB, the others wait for its answer (at most the client's timeouts and retries,
    ``client.py``) instead of asking too.
    """

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        ttl: float = 30.0,
        retry_after: float = 1.0,
        stale_for: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client, self.table, self.clock = client, table, clock
        self.ttl, self.retry_after, self.stale_for = ttl, retry_after, stale_for
        self.good: tuple[float, dict[str, bool | int | str]] | None = None  # (read at, flags)
        self.missing_at: float | None = None  # when GetItem last answered "no item"
        self.failed_at: float | None = None
        self.lock = threading.Lock()

    def read(self) -> Flags:
        with self.lock:
            return self.read_locked()

    def read_locked(self) -> Flags:
        now = self.clock()
        if self.good is not None and now - self.good[0] < self.ttl:
            return Flags(self.good[1], "cache")
        if self.missing_at is not None and now - self.missing_at < self.ttl:
            return Flags(dict(DEFAULTS), "defaults", f"no settings item (read {now - self.missing_at:.0f} s ago)")
        if self.failed_at is not None and now - self.failed_at < self.retry_after:
            return self.fallback(now, f"a GetItem failed {now - self.failed_at:.1f} s ago; not retried yet")
        try:
            item = self.client.get_item(TableName=self.table, Key=KEY).get("Item")
        except (ClientError, BotoCoreError) as exc:
            self.failed_at = now
            return self.fallback(now, f"GetItem failed: {exc}")
        self.failed_at = None
        if item is None:  # an answer: forget the last good flags, and remember the answer for ttl
            self.good, self.missing_at = None, now
            return Flags(dict(DEFAULTS), "defaults", "no settings item")
        self.good, self.missing_at = (now, decode(item)), None
        return Flags(self.good[1], "item")

    def fallback(self, now: float, why: str) -> Flags:
        """After a failed call: the last good flags while young enough, else the safe defaults."""
        if self.good is not None and now - self.good[0] < self.ttl + self.stale_for:
            return Flags(self.good[1], "stale", f"{why}; serving flags {now - self.good[0]:.0f} s old")
        return Flags(dict(DEFAULTS), "defaults", why)

    def invalidate(self) -> None:
        """Forget the cached flags (after your own change, to see it at once)."""
        with self.lock:
            self.good = self.missing_at = None
