"""The per-process cache of the settings item, and the backoff between retries."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from ...shared.validation import check_non_negative
from .results import FlagRead


class FlagCache:
    """A per-process cache of the last good read, with a time-to-live and hit/miss counts.

    The last good read is kept after its TTL ends (:meth:`get` no longer serves it, but
    :meth:`last_good` does, for a store that serves stale flags when a call fails); a failed
    call starts a back-off (:meth:`failed`, :meth:`backing_off`) during which the store does
    not call DynamoDB again.
    """

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        check_non_negative("ttl", ttl)
        self.ttl = ttl
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entry: tuple[float, FlagRead] | None = None
        self._failure: tuple[float, str, str] | None = None
        self._lock = threading.Lock()

    def get(self) -> FlagRead | None:
        """The cached read if still fresh (counts a hit), else None (counts a miss)."""
        with self._lock:
            if self._entry is not None and self.clock() - self._entry[0] < self.ttl:
                self.hits += 1
                return self._entry[1]
            self.misses += 1
            return None

    def put(self, read: FlagRead) -> None:
        """Remember a good read (and end any back-off: DynamoDB answered)."""
        with self._lock:
            self._entry = (self.clock(), read)
            self._failure = None

    def last_good(self, max_age: float) -> tuple[FlagRead, float] | None:
        """The last good read and its age in seconds, if younger than ``max_age``; else None."""
        with self._lock:
            if self._entry is None:
                return None
            age = self.clock() - self._entry[0]
            return (self._entry[1], age) if age < max_age else None

    def failed(self, error_code: str, reason: str) -> None:
        """Note a failed call now: :meth:`backing_off` is true for a while after it."""
        with self._lock:
            self._failure = (self.clock(), error_code, reason)

    def backing_off(self, seconds: float) -> tuple[str, str] | None:
        """(error code, reason) of a call that failed less than ``seconds`` ago, else None."""
        with self._lock:
            if self._failure is None or self.clock() - self._failure[0] >= seconds:
                return None
            return self._failure[1], self._failure[2]

    def invalidate(self) -> None:
        """Forget the cached read (also the last good one); the next read goes to DynamoDB."""
        with self._lock:
            self._entry = None
            self._failure = None


def exponential_jitter(
    base: float = 0.005, cap: float = 0.2, rng: random.Random | None = None
) -> Callable[[int], float]:
    """Backoff "full jitter": a random delay in [0, min(cap, base * 2**attempt)]."""
    r = rng or random.Random()

    def delay(attempt: int) -> float:
        return r.uniform(0, min(cap, base * 2**attempt))

    return delay


__all__ = ["FlagCache", "exponential_jitter"]
