"""A storm on the embedded endpoint, logged per HTTP attempt (the SDK's retries included), and its picture.

Notebook 03 uses it to show a hot key throttling under a storm and a sharded counter that does not;
the partition model itself is :mod:`labkit.throughput`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors_map import THROTTLING_CODES
from .compat import require
from .throughput import partition_limits

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .backend import Connection


@dataclass
class Storm:
    """What :func:`storm` measured: one row per operation, one row per HTTP attempt."""

    ops: pd.DataFrame  # races.stress columns: worker, seq, start, end, ok, error_code, result, calls, retries
    attempts: pd.DataFrame  # time (s from the first attempt), code ("ok" or DynamoDB's error code)

    @property
    def throttled(self) -> int:
        """HTTP attempts DynamoDB answered with a throttling error."""
        return int(self.attempts["code"].isin(THROTTLING_CODES).sum())

    def summary(self) -> dict[str, Any]:
        latency = (self.ops["end"] - self.ops["start"]) * 1000
        seconds = float(self.ops["end"].max()) if len(self.ops) else 0.0
        return {
            "operations": len(self.ops),
            "succeeded": int(self.ops["ok"].sum()),
            "failed": int((~self.ops["ok"]).sum()),
            "http_attempts": len(self.attempts),
            "throttled_attempts": self.throttled,
            "sdk_retries": int(self.ops["retries"].sum()),
            "p50_ms": round(float(latency.median()), 1),
            "p99_ms": round(float(latency.quantile(0.99)), 1),
            "seconds": round(seconds, 2),
        }


def storm(op: Callable[[Any, int, int], Any], *, conn: Connection, threads: int = 16, ops: int = 30) -> Storm:
    """:func:`labkit.races.stress` that also logs every HTTP attempt (throttled or not) of every client.

    Each worker's client keeps botocore's retries (standard mode), so throttled attempts are retried
    with backoff — the latency the lesson shows.
    """
    import pandas as pd

    from .races import stress

    log: list[tuple[float, str]] = []
    lock = threading.Lock()
    watched: set[int] = set()

    def attempt(response: Any = None, **_: Any) -> None:
        if response is None:
            return
        http, parsed = response
        code = parsed.get("Error", {}).get("Code") if http.status_code >= 300 else "ok"
        with lock:
            log.append((time.perf_counter(), str(code or f"HTTP {http.status_code}")))

    def watched_op(client: Any, worker: int, seq: int) -> Any:
        if id(client) not in watched:
            watched.add(id(client))
            client.meta.events.register("needs-retry.dynamodb", attempt)
        return op(client, worker, seq)

    df = stress(watched_op, conn=conn, threads=threads, ops=ops, progress=False)
    attempts = pd.DataFrame(log, columns=["time", "code"])
    if len(attempts):
        attempts["time"] -= attempts["time"].min()
    return Storm(df, attempts.sort_values("time").reset_index(drop=True))


def plot_storm(
    storms: Mapping[str, Storm],
    scale: float,
    *,
    partitions: Mapping[str, int] | None = None,
    bin_seconds: float = 0.5,
) -> Figure:
    """Per storm: attempts per second (accepted vs throttled) over time, and each request's latency.

    ``partitions`` says how many partitions a storm's writes were spread over (default 1), drawn as
    their combined limit.
    """
    import numpy as np

    require("matplotlib", "lab", "labkit.storms.plot_storm")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6.5), layout="constrained")
    axes = fig.subplots(2, len(storms), sharex=True, squeeze=False)
    end = max((float(s.attempts["time"].max()) for s in storms.values() if len(s.attempts)), default=1.0)
    edges = np.arange(0, end + bin_seconds, bin_seconds)
    limit = partition_limits(scale)[1]
    peak = 1.0
    for col, (name, run) in enumerate(storms.items()):
        top, bottom = axes[0][col], axes[1][col]
        t = run.attempts["time"]
        throttled = run.attempts["code"].isin(THROTTLING_CODES)
        ok_counts, _ = np.histogram(t[~throttled], bins=edges)
        bad_counts, _ = np.histogram(t[throttled], bins=edges)
        width = bin_seconds * 0.9
        top.bar(edges[:-1], ok_counts / bin_seconds, width=width, align="edge", color="#4C72B0", label="accepted")
        top.bar(
            edges[:-1],
            bad_counts / bin_seconds,
            width=width,
            align="edge",
            bottom=ok_counts / bin_seconds,
            color="#C44E52",
            label="throttled",
        )
        peak = max(peak, float(((ok_counts + bad_counts) / bin_seconds).max(initial=0)))
        spread = (partitions or {}).get(name, 1)
        top.axhline(
            limit,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"one partition's limit: {limit:g} writes/s (scale {scale:g})",
        )
        s = run.summary()
        spread_note = f"; {spread} partitions, together {limit * spread:g} writes/s" if spread > 1 else ""
        top.set_title(
            f"{name}{spread_note}\n{s['throttled_attempts']} throttled of {s['http_attempts']} attempts, "
            f"{s['failed']} requests failed",
            fontsize=10,
        )
        top.set_ylabel("HTTP attempts / s")
        top.legend(loc="upper right", fontsize=8)
        latency = (run.ops["end"] - run.ops["start"]) * 1000
        retried = run.ops["retries"] > 0
        bottom.scatter(run.ops["start"][~retried], latency[~retried], s=6, color="#4C72B0", label="first attempt")
        bottom.scatter(
            run.ops["start"][retried], latency[retried], s=10, color="#C44E52", label="retried by the SDK (backoff)"
        )
        bottom.set_yscale("log")
        bottom.set_ylabel("request latency (ms)")
        bottom.set_xlabel("seconds since the storm started")
        bottom.legend(loc="upper right", fontsize=8)
    lows, highs = zip(*(axes[1][col].get_ylim() for col in range(len(storms))), strict=True)
    for col in range(len(storms)):
        axes[0][col].set_ylim(0, peak * 1.25)
        axes[1][col].set_ylim(min(lows), max(highs))
    fig.suptitle(f"The same write storm on one item and on a sharded counter (partition scale {scale:g})")
    return fig


__all__ = ["Storm", "plot_storm", "storm"]
