"""Stress: many threads or processes doing the same operation at once, and sweeps over thread counts."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
from botocore.exceptions import BotoCoreError, ClientError

from ..shared.errors import OUTCOME_ERRORS, LabkitError, RaceError, ValidationError, error_code
from ..shared.intercept import Binding, bound, endpoint_key, install
from ..shared.validation import check_callable, check_int
from .sessions import WorkerTally
from .types import StressOp

if TYPE_CHECKING:
    from ..shared.backend import Connection

#: Columns of a stress DataFrame, in order.
STRESS_COLUMNS = (
    "worker",
    "seq",
    "start",
    "end",
    "ok",
    "error_code",
    "result",
    "calls",
    "retries",
)
#: How long a stress worker waits at the start barrier for the others (seconds).
BARRIER_TIMEOUT = 60.0


def _progress_enabled(progress: bool | None, total: int) -> bool:
    """On for long runs in a terminal or notebook; off under CI and pytest (nbval included)."""
    if progress is not None:
        return progress
    if os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ or total < 200:
        return False
    return "ipykernel" in sys.modules or sys.stderr.isatty()


def _worker(
    op: StressOp,
    conn: Connection,
    worker: int,
    ops: int,
    barrier: Any,
    clock: Callable[[], float],
    tick: Callable[[], None],
    stop: Any,
) -> list[dict[str, Any]]:
    """One worker: wait at the barrier, then run ``ops`` operations and record each.

    The worker's thread is bound to its tally: every DynamoDB call the op makes on it (on the
    client it is given or any other botocore client) is counted.
    """
    try:
        install()
        client = conn.new_client()
    except BaseException:
        barrier.abort()
        raise
    tally = WorkerTally()
    endpoint = None if conn.backend == "aws" else endpoint_key(conn.endpoint_url)
    with bound(Binding(f"w{worker}", tally, None, endpoint, who=f"stress worker 'w{worker}'")):
        rows: list[dict[str, Any]] = []
        barrier.wait(BARRIER_TIMEOUT)
        for seq in range(ops):
            if stop.is_set():
                break
            before = (tally.calls, tally.failed, tally.retries)
            start = clock()
            ok, code, result = True, None, None
            try:
                result = op(client, worker, seq)
            except (ClientError, BotoCoreError, LabkitError) as exc:
                if isinstance(exc, LabkitError) and not isinstance(exc, OUTCOME_ERRORS):
                    stop.set()
                    raise
                ok, code = False, error_code(exc)
            except BaseException:
                stop.set()
                raise
            end = clock()
            failed = tally.failed - before[1] - (0 if ok else 1)
            rows.append(
                {
                    "worker": worker,
                    "seq": seq,
                    "start": start,
                    "end": end,
                    "ok": ok,
                    "error_code": code,
                    "result": result,
                    "calls": tally.calls - before[0],
                    "retries": tally.retries - before[2] + max(failed, 0),
                }
            )
            tick()
        return rows


def _process_worker(args: tuple[Any, ...]) -> list[dict[str, Any]]:
    from ..shared.backend import Connection

    op, (backend, url, region, table), worker, ops, barrier, stop = args
    conn = Connection(backend, url, region, table)
    return _worker(op, conn, worker, ops, barrier, time.perf_counter, lambda: None, stop)


def stress(
    op: StressOp,
    *,
    conn: Connection,
    threads: int = 16,
    ops: int = 50,
    processes: bool = False,
    progress: bool | None = None,
    setup: Callable[[], Any] | None = None,
) -> pd.DataFrame:
    """``threads`` workers run ``op(client, worker, seq)`` ``ops`` times each, from one barrier.

    Returns one row per operation: worker, seq, start, end (seconds since the barrier opened),
    ok, error_code (DynamoDB's code for a failed op), result, calls (DynamoDB calls the op made)
    and retries (botocore's own retries plus failed calls the op recovered from). DynamoDB errors
    are recorded; any other exception stops every worker and is raised. Each worker has its own
    client. ``processes=True`` runs each worker in its own process (multiprocessing "spawn"):
    ``op`` must then be picklable — a module-level function, not a lambda or a closure.
    The progress bar shows on long interactive runs, never under CI (``progress`` overrides).
    """
    check_int("threads", threads, least=1)
    check_int("ops", ops, least=1)
    check_callable("op", op, "a function op(client, worker, seq)")
    if setup is not None:
        setup()
    total = threads * ops
    if processes:
        rows = _stress_processes(op, conn, threads, ops)
    else:
        rows = _stress_threads(op, conn, threads, ops, _progress_enabled(progress, total))
    df = pd.DataFrame(rows, columns=list(STRESS_COLUMNS))
    if len(df):
        t0 = df["start"].min()
        df["start"] -= t0
        df["end"] -= t0
    df["ok"] = df["ok"].astype(bool)
    return df.sort_values(["start", "worker", "seq"], kind="stable").reset_index(drop=True)


def _stress_threads(op: StressOp, conn: Connection, threads: int, ops: int, show: bool) -> list[dict[str, Any]]:
    from concurrent.futures import ThreadPoolExecutor

    from tqdm import tqdm

    barrier = threading.Barrier(threads)
    stop = threading.Event()
    bar = tqdm(total=threads * ops, disable=not show, desc="stress", unit="op", leave=False)
    lock = threading.Lock()

    def tick() -> None:
        with lock:
            bar.update(1)

    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="labkit-stress") as pool:
            futures = [
                pool.submit(_worker, op, conn, w, ops, barrier, time.perf_counter, tick, stop) for w in range(threads)
            ]
            rows: list[dict[str, Any]] = []
            failures: list[BaseException] = []
            for fut in futures:
                try:
                    rows.extend(fut.result())
                except BaseException as exc:
                    stop.set()
                    barrier.abort()
                    failures.append(exc)
    finally:
        bar.close()
    real = [f for f in failures if not isinstance(f, threading.BrokenBarrierError)]
    if real:
        raise real[0]
    if failures:
        raise RaceError(
            f"the stress workers never all reached the start barrier within {BARRIER_TIMEOUT}s; use fewer threads"
        ) from failures[0]
    return rows


def _stress_processes(op: StressOp, conn: Connection, workers: int, ops: int) -> list[dict[str, Any]]:
    import pickle

    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if getattr(op, "__module__", None) == "__main__" and not main_file:
        raise ValidationError(
            f"processes=True needs an op a spawned process can import, and {op!r} lives in "
            "a notebook or interactive session; move it to a module, or use threads (processes=False)"
        )
    try:
        pickle.dumps(op)
    except Exception as exc:
        raise ValidationError(
            f"processes=True needs a picklable op, and {op!r} is not ({exc}); define it as a "
            "module-level function in an importable module, or use threads (processes=False)"
        ) from exc
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(workers)
        stop = manager.Event()
        where = (conn.backend, conn.endpoint_url, conn.region, conn.table_name)
        with ctx.Pool(workers) as pool:
            parts = pool.map(_process_worker, [(op, where, w, ops, barrier, stop) for w in range(workers)])
    return [row for part in parts for row in part]


def sweep(
    op: StressOp,
    conn: Connection,
    thread_counts: Sequence[int] = (1, 2, 4, 8, 16),
    *,
    ops: int = 20,
    setup: Callable[[], Any] | None = None,
    measure: Callable[[pd.DataFrame], Any] | None = None,
    processes: bool = False,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Stress once per thread count (``setup()`` before each); anomalies vs concurrency, for a plot.

    ``measure(df)`` turns one stress run into a number (column ``anomalies``) or a mapping of
    columns; by default it counts failed operations. Other columns: threads, ops, ok, failed,
    elapsed (seconds, first start to last end) and throughput (ops/s).
    """
    if not thread_counts:
        raise ValidationError("thread_counts is empty; pass e.g. [1, 2, 4, 8, 16]")
    rows: list[dict[str, Any]] = []
    for n in thread_counts:
        df = stress(op, conn=conn, threads=n, ops=ops, processes=processes, progress=progress, setup=setup)
        elapsed = float(df["end"].max() - df["start"].min()) if len(df) else 0.0
        row: dict[str, Any] = {
            "threads": n,
            "ops": len(df),
            "ok": int(df["ok"].sum()),
            "failed": int((~df["ok"]).sum()),
            "elapsed": elapsed,
            "throughput": len(df) / elapsed if elapsed > 0 else float("nan"),
        }
        found = measure(df) if measure is not None else row["failed"]
        row.update(found if isinstance(found, Mapping) else {"anomalies": found})
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["STRESS_COLUMNS", "stress", "sweep"]
