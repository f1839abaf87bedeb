"""A clock a test moves by hand, for an engine (or a lab) that runs on it."""

from __future__ import annotations


class FakeClock:
    """A monotonic clock that only moves when told to (``clock.now += seconds``)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
