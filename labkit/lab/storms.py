"""A storm on the lab's clock, logged per HTTP attempt (retries included), and its picture.

Notebook 03 uses it to show a hot key throttling under a storm and a sharded counter that does not;
the partition model itself is :mod:`labkit.engine_plugins.throughput`. A storm is a plan in lab seconds, not a race
against this machine's CPU: operation *i* arrives at *i / rate* lab seconds, and the storm takes the
endpoint's clock (:func:`labkit.engine_plugins.faults.lab_clock`: frozen) and moves it to each arrival before it
sends it, never sleeping (decision 141). A throttled attempt is retried as botocore's standard mode
retries — up to :data:`labkit.shared.constants.SDK_ATTEMPTS` attempts, after a backoff of a random fraction
of 1, 2, 4 ... seconds (capped at 20) — on the lab's clock too, the fractions drawn from a seeded
generator. So the same attempts are throttled, and the figure's bars are the same, on an idle and on
a saturated machine.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..engine_plugins.faults.control import LabClock, lab_clock
from ..engine_plugins.throughput import partition_limits
from ..shared import constants as C
from ..shared._errors_map import THROTTLING_CODES
from ..shared.compat import require
from ..shared.validation import check_int, check_positive

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ..shared.backend import Connection

#: botocore's standard retry mode, for throttling errors: the n-th retry waits a random fraction of
#: ``min(BACKOFF_BASE * 2 ** (n - 1), BACKOFF_CAP)`` seconds (botocore.retries.standard.ExponentialBackoff).
BACKOFF_BASE = 1.0
BACKOFF_CAP = 20.0
#: Columns of :attr:`Storm.ops` (those of :func:`labkit.races.stress`, on the lab's clock).
OPS_COLUMNS = ("worker", "seq", "start", "end", "ok", "error_code", "result", "calls", "retries")
#: The partition key of every lab table: an attempt's partition is the value it sends under this name.
PARTITION_KEY = "PK"


def _partition_of(body: Any) -> str | None:
    """The partition key value a request addresses (its ``Key`` or ``Item``), as its JSON; None for a
    request that names no single item (Query, BatchGetItem, TransactWriteItems...)."""
    try:
        request = json.loads(body or b"{}")
    except (TypeError, ValueError):
        return None
    item = request.get("Key") or request.get("Item") if isinstance(request, dict) else None
    value = item.get(PARTITION_KEY) if isinstance(item, dict) else None
    return None if value is None else json.dumps(value, sort_keys=True)


@dataclass
class Storm:
    """What :func:`storm` measured, in lab seconds: one row per operation, one row per HTTP attempt."""

    ops: pd.DataFrame  # worker, seq, start (arrival), end (its last answer), ok, error_code, result, calls, retries
    #: time (lab s from the storm's start), code ("ok" or DynamoDB's error code), partition (the partition
    #: key value the attempt addressed, as JSON; None if it named no single item)
    attempts: pd.DataFrame
    #: The first attempt DynamoDB throttled, as botocore raised it (None: nothing was throttled).
    first_throttle: ClientError | None = None

    @property
    def throttled(self) -> int:
        """HTTP attempts DynamoDB answered with a throttling error."""
        return int(self.attempts["code"].isin(THROTTLING_CODES).sum())

    @property
    def partitions(self) -> int:
        """How many partition key values the storm's attempts addressed (the lab: one partition each)."""
        return int(self.attempts["partition"].nunique())

    def busiest_partition(self) -> str | None:
        """The partition key value (JSON) with the most accepted attempts; None if none was accepted."""
        accepted = self.attempts[self.attempts["code"] == "ok"]["partition"].dropna()
        if accepted.empty:
            return None
        counts = accepted.value_counts()
        return str(min(counts.index[counts == counts.max()]))

    def bars(self, bin_seconds: float = 0.5, end: float | None = None, *, partition: str | None = None) -> pd.DataFrame:
        """The figure's top row: HTTP attempts per second, accepted and throttled, per ``bin_seconds``
        of lab time from 0 to ``end`` (default: the last attempt); only the attempts on ``partition``
        (a value of ``attempts["partition"]``) if given."""
        import numpy as np
        import pandas as pd

        check_positive("bin_seconds", bin_seconds)
        last = float(self.attempts["time"].max()) if len(self.attempts) else 1.0
        edges = np.arange(0, (last if end is None else end) + bin_seconds, bin_seconds)
        attempts = self.attempts if partition is None else self.attempts[self.attempts["partition"] == partition]
        t = attempts["time"]
        throttled = attempts["code"].isin(THROTTLING_CODES)
        ok_counts, _ = np.histogram(t[~throttled], bins=edges)
        bad_counts, _ = np.histogram(t[throttled], bins=edges)
        return pd.DataFrame(
            {"start": edges[:-1], "accepted": ok_counts / bin_seconds, "throttled": bad_counts / bin_seconds}
        )

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


@contextlib.contextmanager
def _clock_of(conn: Connection) -> Iterator[LabClock | None]:
    """The endpoint's clock, taken for the storm; None where there is none to take (DynamoDB Local,
    AWS: they throttle by their own clock, or never), and the storm runs on its plan alone."""
    if conn.backend != "embedded":
        yield None
        return
    with lab_clock(conn) as clock:
        yield clock


def storm(
    op: Callable[[Any, int, int], Any],
    *,
    conn: Connection,
    threads: int = 16,
    ops: int = 30,
    rate: float = 400.0,
    seed: int = 0,
) -> Storm:
    """``threads`` workers x ``ops`` operations ``op(client, worker, seq)`` on the lab's clock.

    Operation *i* (worker ``i % threads``, its ``seq`` ``i // threads``) arrives at ``i / rate`` lab
    seconds; the storm moves the endpoint's frozen clock to each arrival and retry before sending it,
    one at a time, and gives the clock back after. Each worker has its own client, with botocore's
    retries off: a throttled operation is attempted again by the storm, after botocore's standard
    backoff drawn from ``random.Random(seed)``, in lab seconds. ``op`` should make one DynamoDB call
    (an attempt again runs it whole). DynamoDB errors are recorded; any other exception is raised.
    """
    import pandas as pd

    check_int("threads", threads, least=1)
    check_int("ops", ops, least=1)
    check_positive("rate", rate, "operations a second")
    backoff = random.Random(seed)
    log: list[tuple[float, str, str | None]] = []
    now = 0.0  # the lab instant of the attempt being sent

    def attempt(response: Any = None, request_dict: Any = None, **_: Any) -> None:
        if response is None:  # no answer at all (a connection error): not an attempt DynamoDB answered
            return
        http, parsed = response
        code = parsed.get("Error", {}).get("Code") if http.status_code >= 300 else "ok"
        log.append((now, str(code or f"HTTP {http.status_code}"), _partition_of((request_dict or {}).get("body"))))

    clients = []
    for _ in range(threads):
        client = conn.new_client(retries={"mode": "standard", "total_max_attempts": 1})
        client.meta.events.register("needs-retry.dynamodb", attempt)
        clients.append(client)
    total = threads * ops
    # (lab instant, operation, attempt): arrivals and retries, sent in lab-time order
    due: list[tuple[float, int, int]] = [(i / rate, i, 1) for i in range(total)]
    heapq.heapify(due)
    rows: list[dict[str, Any] | None] = [None] * total
    first_throttle: ClientError | None = None
    with _clock_of(conn) as clock:
        while due:
            now, i, tries = heapq.heappop(due)
            if clock is not None:
                clock.at(now)
            worker, seq = i % threads, i // threads
            row = rows[i] or {"worker": worker, "seq": seq, "start": now, "calls": 0}
            rows[i] = row
            before = len(log)
            try:
                row.update(ok=True, error_code=None, result=op(clients[worker], worker, seq))
            except ClientError as exc:
                code = str(exc.response.get("Error", {}).get("Code"))
                row.update(ok=False, error_code=code, result=None)
                if code in THROTTLING_CODES and first_throttle is None:
                    first_throttle = exc
                if code in THROTTLING_CODES and tries < C.SDK_ATTEMPTS:
                    wait = backoff.random() * min(BACKOFF_BASE * 2 ** (tries - 1), BACKOFF_CAP)
                    heapq.heappush(due, (now + wait, i, tries + 1))
            row.update(end=now, retries=tries - 1)
            row["calls"] += len(log) - before
    frame = pd.DataFrame(rows, columns=list(OPS_COLUMNS))
    attempts = pd.DataFrame(log, columns=["time", "code", "partition"])
    return Storm(frame, attempts.sort_values("time", kind="stable").reset_index(drop=True), first_throttle)


def plot_storm(storms: Mapping[str, Storm], scale: float, *, bin_seconds: float = 0.5) -> Figure:
    """Per storm: attempts per second (accepted vs throttled) on its busiest partition, and each request's wait.

    The top row compares like with like: the attempts on one partition (the one with the most accepted
    attempts, :meth:`Storm.busiest_partition`) against one partition's write limit (dashed), in
    ``bin_seconds`` bins of lab time (:meth:`Storm.bars`); a bin above the limit is annotated: the lab's
    bucket starts full (one second of the limit, :mod:`labkit.engine_plugins.throughput`). The bottom row is each
    request's time from its arrival to its last answer, in lab seconds (0: answered at its first attempt).
    """
    require("matplotlib", "lab", "labkit.lab.storms.plot_storm")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6.5), layout="constrained")
    axes = fig.subplots(2, len(storms), sharex=True, squeeze=False)
    end = max((float(s.attempts["time"].max()) for s in storms.values() if len(s.attempts)), default=1.0)
    limit = partition_limits(scale)[1]
    peak = 1.0
    for col, (name, run) in enumerate(storms.items()):
        top, bottom = axes[0][col], axes[1][col]
        busiest = run.busiest_partition()
        bars = run.bars(bin_seconds, end, partition=busiest)
        width = bin_seconds * 0.9
        top.bar(bars["start"], bars["accepted"], width=width, align="edge", color="#4C72B0", label="accepted")
        top.bar(
            bars["start"],
            bars["throttled"],
            width=width,
            align="edge",
            bottom=bars["accepted"],
            color="#C44E52",
            label="throttled",
        )
        peak = max(peak, float((bars["accepted"] + bars["throttled"]).max()) if len(bars) else 0.0)
        top.axhline(
            limit,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"one partition's limit: {limit:g} writes/s",
        )
        over = bars[bars["accepted"] > limit]
        if len(over):
            first = over.iloc[0]
            writes = float(first["accepted"]) * bin_seconds
            top.annotate(
                f"first {bin_seconds:g} s: {writes:g} writes accepted =\n{limit:g} in the full bucket (one second"
                f" of the limit)\n+ {writes - limit:g} refilled meanwhile",
                xy=(float(first["start"]) + width / 2, float(first["accepted"])),
                xytext=(float(first["start"]) + 4 * bin_seconds, limit * 6),
                fontsize=8,
                bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.6"},
                arrowprops={"arrowstyle": "->", "color": "black", "linewidth": 0.8},
            )
        s = run.summary()
        where = "its one partition" if run.partitions == 1 else f"the busiest of its {run.partitions} partitions"
        top.set_title(
            f"{name}: {where}\n{s['throttled_attempts']} throttled of {s['http_attempts']} attempts in all, "
            f"{s['failed']} requests failed",
            fontsize=10,
        )
        top.set_ylabel(
            f"HTTP attempts a second, one partition\n"
            f"(a bar: {bin_seconds:g} s of lab time, its count / {bin_seconds:g})"
        )
        top.legend(loc="upper right", fontsize=8)
        waited = run.ops["end"] - run.ops["start"]
        retried = run.ops["retries"] > 0
        bottom.scatter(run.ops["start"][~retried], waited[~retried], s=6, color="#4C72B0", label="first attempt")
        bottom.scatter(run.ops["start"][retried], waited[retried], s=10, color="#C44E52", label="retried (backoff)")
        bottom.set_ylabel("arrival to last answer (lab s)")
        bottom.set_xlabel("lab seconds since the storm started")
        bottom.legend(loc="upper right", fontsize=8)
    lows, highs = zip(*(axes[1][col].get_ylim() for col in range(len(storms))), strict=True)
    for col in range(len(storms)):
        axes[0][col].set_ylim(0, peak * 1.25)
        axes[1][col].set_ylim(min(lows), max(highs))
    fig.suptitle(f"The same write storm on one item and on a sharded counter, partition by partition (scale {scale:g})")
    return fig


__all__ = ["BACKOFF_BASE", "BACKOFF_CAP", "OPS_COLUMNS", "PARTITION_KEY", "Storm", "plot_storm", "storm"]
