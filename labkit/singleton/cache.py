"""The per-process cache of the settings item, and the backoff between retries."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from ..errors import ValidationError
from .results import FlagRead


class FlagCache:
    """A per-process cache of the last good read, with a time-to-live and hit/miss counts."""

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl < 0:
            raise ValidationError(f"cache ttl must be >= 0 seconds, got {ttl}")
        self.ttl = ttl
        self.clock = clock
        self.hits = 0
        self.misses = 0
        self._entry: tuple[float, FlagRead] | None = None
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
        with self._lock:
            self._entry = (self.clock(), read)

    def invalidate(self) -> None:
        """Forget the cached read; the next read goes to DynamoDB."""
        with self._lock:
            self._entry = None


def exponential_jitter(
    base: float = 0.005, cap: float = 0.2, rng: random.Random | None = None
) -> Callable[[int], float]:
    """Backoff "full jitter": a random delay in [0, min(cap, base * 2**attempt)]."""
    r = rng or random.Random()

    def delay(attempt: int) -> float:
        return r.uniform(0, min(cap, base * 2**attempt))

    return delay


__all__ = ["FlagCache", "exponential_jitter"]
