"""The order the test loop hands its work to its xdist workers: the longest files first.

``--dist loadscope`` (nbval needs it: a notebook's cells share one kernel) hands out one scope at a
time: a test module, a test class or a notebook. xdist orders them by how many tests they hold, so
a file of two long tests (the soundness search, the docs' team runs) came last and one worker ran it
while the other had finished. Longest first is the classic remedy for that tail: here "longest" is
the seconds each scope took in a recorded run, ``tests/scope_seconds.json`` (decision 135). The order
changes nothing about what runs: every test still runs once, each file's tests in their own order.

Refresh the record after adding or changing long tests::

    python3 bootstrap.py test --write-scope-seconds

A scope the record does not know is costed at the record's median seconds per test times its tests.

The loop's other process setting lives here too, beside its order: the garbage collector's thresholds
the root conftest.py sets (:data:`GC_THRESHOLDS`, decision 232).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path

#: The loop's garbage collector, set by the root conftest.py (decision 232): a young generation of 50,000
#: objects instead of 700, and the middle one collected every 20 young collections instead of 10, so that a
#: run's short-lived cycles (botocore requests, explore's runs) die young instead of reaching the old one.
GC_THRESHOLDS = (50_000, 20, 20)

RECORD = Path(__file__).resolve().parent.parent / "tests" / "scope_seconds.json"


def scope_of(nodeid: str) -> str:
    """The unit xdist's loadscope hands to one worker (its own rule: split at the last ``::``)."""
    return nodeid.rsplit("::", 1)[0]


def longest_first(nodeids: list[str], seconds: Mapping[str, float]) -> list[int]:
    """Indices into ``nodeids``: scopes by recorded ``seconds``, largest first (ties: collection order),
    each scope's tests together and in their collected order."""
    scopes: dict[str, list[int]] = {}
    for index, nodeid in enumerate(nodeids):
        scopes.setdefault(scope_of(nodeid), []).append(index)
    per_test = [seconds[s] / len(i) for s, i in scopes.items() if s in seconds] or [0.0]
    unknown = statistics.median(per_test)

    def cost(scope: str) -> float:
        return seconds[scope] if scope in seconds else unknown * len(scopes[scope])

    ranked = sorted(scopes, key=lambda scope: -cost(scope))  # sorted is stable: ties keep their order
    return [index for scope in ranked for index in scopes[scope]]


def load(path: Path = RECORD) -> dict[str, float]:
    """The recorded seconds per scope; empty when there is no record (then xdist's count order rules)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def record(durations: Iterable[tuple[str, float]], path: Path = RECORD) -> None:
    """Write the seconds per scope of ``(nodeid, seconds)`` pairs (each phase of each test)."""
    totals: dict[str, float] = {}
    for nodeid, duration in durations:
        totals[scope_of(nodeid)] = totals.get(scope_of(nodeid), 0.0) + duration
    ranked = dict(sorted(((s, round(t, 2)) for s, t in totals.items()), key=lambda kv: (-kv[1], kv[0])))
    path.write_text(json.dumps(ranked, indent=1) + "\n")
