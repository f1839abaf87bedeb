"""The race lab: force an interleaving of DynamoDB calls, try every one, or just stress.

A race is *forced*, not hoped for. Every actor gets its own botocore client, and
labkit hooks that client's events:

``before-call.dynamodb``
    the call waits until it is that actor's turn in the order (a
    ``threading.Condition``; no sleeps) — then its HTTP request goes out;
``after-call.dynamodb`` / ``after-call-error.dynamodb``
    the call is recorded in the history and the next turn is granted. The first
    fires for every answer, DynamoDB errors included; the second for connection errors.

Gated clients have botocore's automatic retries off, so one turn is exactly one HTTP
request; the retries an actor's own code makes are ordinary calls. Calls beyond
the order run freely once the order is exhausted.

An actor that ends with a DynamoDB error (``ClientError`` or labkit's
``DynamoError``, e.g. ``ConditionalCheckFailedException`` or ``ValueTaken``) has
produced an *outcome*: it lands in ``res.errors``. An order that cannot be followed
— an unknown actor, an actor that returns or fails before taking all its turns,
an actor that raises anything else, a turn not taken within ``timeout`` — raises
:class:`~labkit.errors.RaceError` and never hangs.

Actors must make their DynamoDB calls with the client they are given; calls made on
any other client are neither gated nor recorded.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
from botocore.exceptions import BotoCoreError, ClientError

from .errors import DynamoError, RaceError, ValidationError, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from .backend import Connection

Actor = Callable[["DynamoDBClient"], Any]
Op = Callable[["DynamoDBClient", int, int], Any]

#: Columns of a history DataFrame, in order.
HISTORY_COLUMNS = ("actor", "seq", "turn", "operation", "key", "start", "end", "outcome", "retries")
#: Columns of a stress DataFrame, in order.
STRESS_COLUMNS = (
    "worker", "seq", "start", "end", "ok", "error_code", "result", "calls", "retries",
)
#: A gated turn is exactly one HTTP request: botocore's own retries are off.
NO_RETRIES: dict[str, Any] = {"retries": {"max_attempts": 1, "mode": "standard"}}
#: all_interleavings refuses to run more orders than this (the count grows factorially).
MAX_ORDERS = 2000
#: After an abort, how long to wait for actors to leave (waiting ones leave at once).
ABORT_GRACE = 0.25
#: How long a stress worker waits at the start barrier for the others (seconds).
BARRIER_TIMEOUT = 60.0
_CTX = "labkit_call"


class _Aborted(BaseException):
    """Raised out of a gated call once the run is aborted; `except Exception` cannot swallow it."""


# ---------------------------------------------------------------- call keys


def _value(av: Any) -> str:
    """One DynamoDB attribute value as a short string."""
    if isinstance(av, Mapping) and len(av) == 1:
        kind, raw = next(iter(av.items()))
        if kind in ("S", "N"):
            return str(raw)
        if kind == "BOOL":
            return str(raw).lower()
        if kind == "NULL":
            return "null"
        return f"<{kind}>"
    return str(av)


def _key_string(attrs: Mapping[str, Any] | None) -> str:
    """PK/SK (or whatever key attributes there are) as ``"ACCT#1/PROFILE"``."""
    if not attrs:
        return ""
    if "PK" in attrs:
        names = ["PK", "SK"] if "SK" in attrs else ["PK"]
    else:
        names = sorted(attrs)[:2] if len(attrs) <= 2 else sorted(attrs)[:1]
    return "/".join(_value(attrs[n]) for n in names)


def _transact_key(entry: Mapping[str, Any]) -> str:
    (action, body), = entry.items()
    return _key_string(body.get("Key") or body.get("Item"))


def call_key(operation: str, params: Mapping[str, Any]) -> str:
    """A short string naming the item(s) a call touches (Key, Item, TransactItems, query values)."""
    if "Key" in params:
        return _key_string(params["Key"])
    if "Item" in params:
        return _key_string(params["Item"])
    if "TransactItems" in params:
        return "; ".join(_transact_key(e) for e in params["TransactItems"])
    if operation == "Query":
        values = params.get("ExpressionAttributeValues") or {}
        return "/".join(_value(values[k]) for k in sorted(values))
    if "RequestItems" in params:
        n = sum(len(v) if isinstance(v, list) else len(v.get("Keys", [])) for v in
                params["RequestItems"].values())
        return f"{n} items"
    return ""


# ---------------------------------------------------------------- recording and gating


class _Session:
    """What one run (an interleaving, or a stress run) does with the calls it sees."""

    def before(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError

    def after(self, actor: str, call: dict[str, Any]) -> None:
        raise NotImplementedError


class _Probe:
    """The botocore event handlers on one client; they hand every call to the current session."""

    def __init__(self, client: DynamoDBClient, actor: str) -> None:
        self.client = client
        self.actor = actor
        self.session: _Session | None = None
        events = client.meta.events
        events.register("before-parameter-build.dynamodb", self._params)
        events.register("before-call.dynamodb", self._before)
        # most specific and first: runs before any other after-call handler can raise
        for operation in client.meta.service_model.operation_names:
            events.register_first(f"after-call.dynamodb.{operation}", self._after)
        events.register("after-call-error.dynamodb", self._error)

    def _params(self, params: Mapping[str, Any], model: Any, context: dict[str, Any],
                **_: Any) -> None:
        context[_CTX] = {"operation": model.name, "key": call_key(model.name, params)}

    def _before(self, context: dict[str, Any], **_: Any) -> None:
        session = self.session
        if session is not None and _CTX in context:
            session.before(self.actor, context[_CTX])

    def _finish(self, context: dict[str, Any], outcome: str, retries: int) -> None:
        session = self.session
        call = context.get(_CTX)
        if session is not None and call is not None and "start" in call:
            call["outcome"] = outcome
            call["retries"] = retries
            session.after(self.actor, call)

    def _after(self, http_response: Any, parsed: Mapping[str, Any], context: dict[str, Any],
               **_: Any) -> None:
        outcome = "ok"
        if http_response.status_code >= 300:
            code = parsed.get("Error", {}).get("Code")
            outcome = str(code or f"HTTP {http_response.status_code}")
        retries = int(parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0))
        self._finish(context, outcome, retries)

    def _error(self, exception: BaseException, context: dict[str, Any], **_: Any) -> None:
        self._finish(context, type(exception).__name__, 0)


def _history(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame([{c: r.get(c) for c in HISTORY_COLUMNS} for r in rows],
                      columns=list(HISTORY_COLUMNS))
    df["turn"] = df["turn"].astype("Int64")
    df["retries"] = df["retries"].astype("int64")
    df["seq"] = df["seq"].astype("int64")
    return df.sort_values(["start", "actor", "seq"], kind="stable").reset_index(drop=True)


def _is_outcome(exc: BaseException) -> bool:
    """A DynamoDB error an actor may end with as part of the lesson."""
    return isinstance(exc, ClientError | DynamoError)


class _Run(_Session):
    """One forced interleaving: whose turn it is, who is done, what happened."""

    def __init__(self, order: Sequence[str], deadline: float, strict: bool) -> None:
        self.order = list(order)
        self.requested = tuple(order)
        self.strict = strict
        self.pos = 0
        self.in_flight = False
        self.deadline = deadline
        self.cond = threading.Condition()
        self.failure: RaceError | None = None
        self.done = 0
        self.rows: list[dict[str, Any]] = []
        self.seq: Counter[str] = Counter()
        self.taken: Counter[str] = Counter()
        self.t0 = time.perf_counter()

    def _describe(self) -> str:
        done = " ".join(self.order[: self.pos]) or "(none)"
        return f"order {' '.join(self.requested)!r}, turns taken so far: {done}"

    def before(self, actor: str, call: dict[str, Any]) -> None:
        with self.cond:
            call["actor"] = actor
            call["seq"] = self.seq[actor]
            self.seq[actor] += 1
            while True:
                if self.failure is not None:
                    raise _Aborted
                if self.pos >= len(self.order):
                    call["turn"] = None
                    break
                if not self.in_flight and self.order[self.pos] == actor:
                    call["turn"] = self.pos
                    self.in_flight = True
                    self.taken[actor] += 1
                    break
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.failure = self._stalled()
                    self.cond.notify_all()
                    raise _Aborted
                self.cond.wait(remaining)
            call["start"] = time.perf_counter() - self.t0

    def after(self, actor: str, call: dict[str, Any]) -> None:
        with self.cond:
            call["end"] = time.perf_counter() - self.t0
            self.rows.append(dict(call))
            if call.get("turn") is not None:
                self.pos += 1
                self.in_flight = False
                self.cond.notify_all()

    def _stalled(self) -> RaceError:
        nxt = self.order[self.pos] if self.pos < len(self.order) else "?"
        if self.in_flight:  # a slow answer (a loaded machine, a slow endpoint), not a stuck actor
            return RaceError(
                f"timed out: turn {self.pos + 1} (actor {nxt!r}) was taken but its call had not "
                f"answered; {self._describe()}. The endpoint is slow or overloaded: raise `timeout`."
            )
        return RaceError(
            f"timed out: turn {self.pos + 1} (actor {nxt!r}) was never taken; {self._describe()}. "
            f"Check that actor {nxt!r} makes its DynamoDB calls with the client it is given "
            "and does not wait on another actor; or raise `timeout`."
        )

    def finished(self, actor: str, exc: BaseException | None) -> None:
        """An actor's function returned (exc None) or raised."""
        with self.cond:
            self.done += 1
            self.cond.notify_all()
            if self.failure is not None or isinstance(exc, _Aborted):
                return
            if exc is not None and not _is_outcome(exc):
                error = RaceError(
                    f"actor {actor!r} raised {type(exc).__name__}: {exc} "
                    f"(after {self.taken[actor]} turn(s); {self._describe()}). "
                    "Fix the actor; only DynamoDB errors count as an outcome of a race."
                )
                error.__cause__ = exc
                self.failure = error
            else:
                left = self.order[self.pos:].count(actor)
                if left and self.strict:
                    how = "returned" if exc is None else f"ended with {error_code(exc)}"
                    self.failure = RaceError(
                        f"actor {actor!r} {how} after {self.taken[actor]} turn(s) but the order "
                        f"gives it {self.taken[actor] + left}; {self._describe()}. "
                        f"Give {actor!r} fewer turns, or pass strict=False to drop turns an "
                        "actor no longer takes."
                    )
                elif left:
                    self.order = self.order[: self.pos] + [
                        a for a in self.order[self.pos:] if a != actor
                    ]
            self.cond.notify_all()


# ---------------------------------------------------------------- forced interleavings


@dataclass(frozen=True)
class Interleaving:
    """What one forced interleaving did: per-actor results or errors, and every call made."""

    order: tuple[str, ...]
    results: dict[str, Any]
    errors: dict[str, BaseException]
    history: pd.DataFrame = field(repr=False)
    turns: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The order as ``"A B A B"``."""
        return " ".join(self.order)

    def error_codes(self) -> dict[str, str]:
        """Each failed actor's DynamoDB error code (``ConditionalCheckFailedException``, ...)."""
        return {name: error_code(exc) for name, exc in self.errors.items()}


def parse_order(order: str | Sequence[str], actors: Iterable[str]) -> tuple[str, ...]:
    """``"ABAB"``, ``"A B A B"`` or ``["A", "B", "A", "B"]`` -> ``("A", "B", "A", "B")``."""
    if isinstance(order, str):
        steps = order.split() if any(ch.isspace() for ch in order) else list(order)
    else:
        steps = list(order)
    known = set(actors)
    unknown = sorted({str(s) for s in steps if s not in known})
    if unknown:
        raise RaceError(
            f"the order {order!r} names unknown actor(s) {', '.join(map(repr, unknown))}; "
            f"the actors are {', '.join(map(repr, sorted(known)))}. Use only those names."
        )
    return tuple(steps)


def _check_actors(actors: Mapping[str, Actor]) -> None:
    if not actors:
        raise ValidationError("no actors given; pass e.g. {'A': fn_a, 'B': fn_b}")
    for name, fn in actors.items():
        if not isinstance(name, str) or not name or any(ch.isspace() for ch in name):
            raise ValidationError(f"actor name {name!r} must be a non-empty string without spaces")
        if not callable(fn):
            raise ValidationError(
                f"actor {name!r} is {type(fn).__name__}, not a callable taking one DynamoDB client"
            )


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise ValidationError(f"timeout must be a positive number of seconds, not {timeout!r}")


def _gated_clients(actors: Mapping[str, Actor], conn: Connection) -> dict[str, _Probe]:
    return {name: _Probe(conn.new_client(**NO_RETRIES), name) for name in actors}


def _run(
    actors: Mapping[str, Actor],
    order: tuple[str, ...],
    probes: Mapping[str, _Probe],
    timeout: float,
    strict: bool,
) -> Interleaving:
    run = _Run(order, time.monotonic() + timeout, strict)
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}

    def body(name: str) -> None:
        exc: BaseException | None = None
        try:
            results[name] = actors[name](probes[name].client)
        except BaseException as caught:  # recorded, judged by run.finished
            exc = caught
            if not isinstance(caught, _Aborted):
                errors[name] = caught
        finally:
            run.finished(name, exc)

    for probe in probes.values():
        probe.session = run
    threads = [
        threading.Thread(target=body, args=(name,), name=f"labkit-actor-{name}", daemon=True)
        for name in actors
    ]
    try:
        for t in threads:
            t.start()
        with run.cond:  # until every actor is done, the run failed, or time is up
            while run.done < len(threads) and run.failure is None:
                remaining = run.deadline - time.monotonic()
                if remaining <= 0:
                    alive = [t.name.removeprefix("labkit-actor-") for t in threads
                             if t.is_alive()]
                    run.failure = RaceError(f"{run._stalled()} Still running: {', '.join(alive)}.")
                    run.cond.notify_all()
                    break
                run.cond.wait(remaining)
        for t in threads:  # waiting actors give up at once on failure; others get a moment
            t.join(ABORT_GRACE if run.failure is not None else None)
    finally:
        if run.failure is None:  # an aborted run stays attached: a late call raises _Aborted
            for probe in probes.values():
                probe.session = None
    if run.failure is not None:
        raise run.failure
    taken = tuple(r["actor"] for r in sorted(run.rows, key=lambda r: r["start"])
                  if r.get("turn") is not None)
    return Interleaving(order, results, errors, _history(run.rows), taken)


def run_interleaving(
    actors: Mapping[str, Actor],
    order: str | Sequence[str],
    *,
    conn: Connection,
    timeout: float = 10.0,
    strict: bool = True,
) -> Interleaving:
    """Run the actors concurrently, their DynamoDB calls forced into ``order`` (a turn = a call)."""
    _check_actors(actors)
    _check_timeout(timeout)
    steps = parse_order(order, actors)
    return _run(actors, steps, _gated_clients(actors, conn), timeout, strict)


def interleavings(calls: Mapping[str, int]) -> list[tuple[str, ...]]:
    """Every order of the given calls per actor, sorted (``{"A": 1, "B": 1}`` -> AB, BA)."""
    for name, n in calls.items():
        if not isinstance(n, int) or n < 0:
            raise ValidationError(f"calls[{name!r}] must be a non-negative int, not {n!r}")
    total = sum(calls.values())
    count = math.factorial(total)
    for n in calls.values():
        count //= math.factorial(n)
    if count > MAX_ORDERS:
        raise ValidationError(
            f"{dict(calls)} gives {count:,} orders, more than {MAX_ORDERS:,}; "
            "use fewer actors or fewer calls per actor (2-3 of each is plenty to show a race)"
        )
    orders: list[tuple[str, ...]] = []

    def extend(prefix: list[str], left: dict[str, int]) -> None:
        if not any(left.values()):
            orders.append(tuple(prefix))
            return
        for name in sorted(left):
            if left[name]:
                left[name] -= 1
                prefix.append(name)
                extend(prefix, left)
                prefix.pop()
                left[name] += 1

    extend([], dict(calls))
    return orders


def _default_outcome(res: Interleaving) -> dict[str, Any]:
    codes = res.error_codes()
    return {name: codes.get(name, res.results.get(name)) for name in sorted({*res.results, *codes})}


def count_calls(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    timeout: float = 10.0,
) -> dict[str, int]:
    """How many DynamoDB calls each actor makes when it runs alone after ``setup()``."""
    _check_actors(actors)
    probes = _gated_clients(actors, conn)
    calls: dict[str, int] = {}
    for name in actors:
        if setup is not None:
            setup()
        try:
            res = _run({name: actors[name]}, (), {name: probes[name]}, timeout, True)
        except RaceError as exc:
            raise RaceError(f"counting calls, actor {name!r} ran alone after setup() and "
                            f"failed: {exc}") from exc.__cause__
        calls[name] = len(res.history)
        if calls[name] == 0:
            raise RaceError(
                f"actor {name!r} made no DynamoDB call on the client it was given, so there is "
                "nothing to interleave; make its calls with that client"
            )
    return calls


def all_interleavings(
    actors: Mapping[str, Actor],
    *,
    conn: Connection,
    setup: Callable[[], Any] | None = None,
    outcome: Callable[[Interleaving], Any] | None = None,
    calls: Mapping[str, int] | None = None,
    timeout: float = 10.0,
    strict: bool = False,
) -> pd.DataFrame:
    """Run every order of the actors' calls: one row per order, ``order`` + ``outcome(res)``.

    Calls per actor come from a dry run of each actor alone after ``setup()`` unless ``calls``
    is given; ``setup()`` runs before every order. ``outcome`` returns a mapping (its keys become
    columns) or a single value (column ``outcome``); by default, each actor's result or error code.
    With ``strict=False`` an actor that ends before taking all its turns (e.g. it found the email
    taken and stopped) simply gives them up. ``df.attrs["calls"]`` holds the calls per actor.
    """
    _check_actors(actors)
    _check_timeout(timeout)
    if calls is None:
        calls = count_calls(actors, conn=conn, setup=setup, timeout=timeout)
    else:
        parse_order(list(calls), actors)
        missing = sorted(set(actors) - set(calls))
        if missing:
            raise ValidationError(f"calls gives no count for actor(s) {missing}; add them")
    judge = outcome or _default_outcome
    probes = _gated_clients(actors, conn)
    rows: list[dict[str, Any]] = []
    for order in interleavings(calls):
        if setup is not None:
            setup()
        res = _run(actors, order, probes, timeout, strict)
        found = judge(res)
        row: dict[str, Any] = {"order": res.label}
        row.update(found if isinstance(found, Mapping) else {"outcome": found})
        rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["calls"] = dict(calls)
    return df


# ---------------------------------------------------------------- stress


class _Tally(_Session):
    """Counts one worker's calls, failed calls and botocore retries (no gating)."""

    def __init__(self) -> None:
        self.calls = 0
        self.failed = 0
        self.retries = 0

    def before(self, actor: str, call: dict[str, Any]) -> None:
        call["start"] = time.perf_counter()

    def after(self, actor: str, call: dict[str, Any]) -> None:
        self.calls += 1
        self.retries += int(call.get("retries") or 0)
        if call.get("outcome") != "ok":
            self.failed += 1


def _progress_enabled(progress: bool | None, total: int) -> bool:
    """On for long runs in a terminal or notebook; off under CI and pytest (nbval included)."""
    if progress is not None:
        return progress
    if os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ or total < 200:
        return False
    return "ipykernel" in sys.modules or sys.stderr.isatty()


def _worker(
    op: Op,
    conn: Connection,
    worker: int,
    ops: int,
    barrier: Any,
    clock: Callable[[], float],
    tick: Callable[[], None],
    stop: Any,
) -> list[dict[str, Any]]:
    """One worker: wait at the barrier, then run ``ops`` operations and record each."""
    try:
        probe = _Probe(conn.new_client(), f"w{worker}")
    except BaseException:
        barrier.abort()
        raise
    tally = _Tally()
    probe.session = tally
    rows: list[dict[str, Any]] = []
    barrier.wait(BARRIER_TIMEOUT)
    for seq in range(ops):
        if stop.is_set():
            break
        before = (tally.calls, tally.failed, tally.retries)
        start = clock()
        ok, code, result = True, None, None
        try:
            result = op(probe.client, worker, seq)
        except (ClientError, DynamoError, BotoCoreError) as exc:
            ok, code = False, error_code(exc)
        except BaseException:
            stop.set()
            raise
        end = clock()
        failed = tally.failed - before[1] - (0 if ok else 1)
        rows.append({
            "worker": worker, "seq": seq, "start": start, "end": end, "ok": ok,
            "error_code": code, "result": result, "calls": tally.calls - before[0],
            "retries": tally.retries - before[2] + max(failed, 0),
        })
        tick()
    return rows


def _process_worker(args: tuple[Any, ...]) -> list[dict[str, Any]]:
    from .backend import Connection

    op, (backend, url, region, table), worker, ops, barrier, stop = args
    conn = Connection(backend, url, region, table)
    return _worker(op, conn, worker, ops, barrier, time.perf_counter, lambda: None, stop)


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValidationError(f"{name} must be a positive int, not {value!r}")


def stress(
    op: Op,
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
    _check_counts(threads=threads, ops=ops)
    if not callable(op):
        raise ValidationError(f"op is {type(op).__name__}; pass a callable op(client, worker, seq)")
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


def _stress_threads(op: Op, conn: Connection, threads: int, ops: int,
                    show: bool) -> list[dict[str, Any]]:
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
                pool.submit(_worker, op, conn, w, ops, barrier, time.perf_counter, tick, stop)
                for w in range(threads)
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
            f"the stress workers never all reached the start barrier within {BARRIER_TIMEOUT}s; "
            "use fewer threads"
        ) from failures[0]
    return rows


def _stress_processes(op: Op, conn: Connection, workers: int, ops: int) -> list[dict[str, Any]]:
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
            parts = pool.map(_process_worker, [(op, where, w, ops, barrier, stop)
                                               for w in range(workers)])
    return [row for part in parts for row in part]


def sweep(
    op: Op,
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
        df = stress(op, conn=conn, threads=n, ops=ops, processes=processes,
                    progress=progress, setup=setup)
        elapsed = float(df["end"].max() - df["start"].min()) if len(df) else 0.0
        row: dict[str, Any] = {
            "threads": n, "ops": len(df), "ok": int(df["ok"].sum()),
            "failed": int((~df["ok"]).sum()), "elapsed": elapsed,
            "throughput": len(df) / elapsed if elapsed > 0 else float("nan"),
        }
        found = measure(df) if measure is not None else row["failed"]
        row.update(found if isinstance(found, Mapping) else {"anomalies": found})
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "HISTORY_COLUMNS",
    "Interleaving",
    "STRESS_COLUMNS",
    "all_interleavings",
    "call_key",
    "count_calls",
    "error_code",
    "interleavings",
    "parse_order",
    "run_interleaving",
    "stress",
    "sweep",
]
