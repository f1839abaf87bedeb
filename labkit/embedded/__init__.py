"""The composition root: labkit's embedded endpoint, assembled in one place.

The engine core (:mod:`labkit.endpoint`) imports no plug-in; this module lists the defaults it
is handed and builds every engine and endpoint labkit runs — ``labkit.connect()`` (through
:func:`shared_endpoint`), ``labkit serve``, ``labkit lab``, the pytest plugin, the benchmarks and
the tests. Like botocore's ``BUILTIN_HANDLERS`` or pytest's ``default_plugins``: to see what an
engine runs besides DynamoDB, read :data:`PROFILES` and :func:`build_engine`.

Profiles:

``labkit`` (the default)
    * hook :class:`labkit.engine_plugins.throughput.PartitionThrottle` without a scale: a hot key throttles on
      tables tagged ``labkit:partition-scale``, never on others;
    * hook :class:`labkit.engine_plugins.faults.FaultInjector`: endpoint fault rules (``labkit serve --faults``,
      ``Labkit.SetFaults``) and transactions held in flight for the race lab;
    * control operations (``X-Amz-Target: Labkit.<name>``): ``SetFaults``, ``GetFaults``,
      ``HoldTransaction``, ``ReleaseTransaction`` (the injector's, :func:`labkit.engine_plugins.faults.fault_controls`)
      ``AdvanceClock`` and ``SetClock`` (the engine's clock: :func:`advance_clock`, :func:`set_clock`),
      ``ExpireItems`` and ``DescribeExpiry`` (DynamoDB's TTL process, run when the lab says: :func:`expire_items`),
      ``ListReplications``, ``DeliverReplications`` and ``SetReplicationLag`` (global tables' deliveries);
    * weak answers (:mod:`labkit.endpoint.weak`): an image history, and the
      ``X-Labkit-Weak-Answer`` request header answered (stale-read, unprocessed-items, short-page).
``dynamodb-local``
    the engine alone, as DynamoDB Local behaves: no throttle, no fault injector, no weak answers
    (the header is a 400), no global tables (ReplicaUpdates refused), and ``Labkit.*`` answered as
    DynamoDB answers an unknown operation (``UnknownOperationException``).

Every endpoint listens on 127.0.0.1 only (:class:`labkit.endpoint.EmbeddedEndpoint`).

The composition root is a layer of one module: this one.

May import: shared, endpoint, engine_plugins.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from ..endpoint import LOOPBACK, Control, DynamoEngine, EmbeddedEndpoint, bind_loopback
from ..endpoint.errors import ClientFault
from ..engine_plugins.faults.injector import FaultInjector, fault_controls
from ..engine_plugins.faults.rules import FaultRules
from ..engine_plugins.throughput import PartitionThrottle, engine_settings
from ..shared import constants as C
from ..shared.catalogue import Op
from ..shared.errors import ConfigurationError, ValidationError
from ..shared.validation import check_choice, check_non_negative

LABKIT = "labkit"
DYNAMODB_LOCAL = "dynamodb-local"
#: Profile name -> what it adds to the engine core (``labkit serve --profile``).
PROFILES: dict[str, str] = {
    LABKIT: "labkit's defaults: the partition throttle (tagged tables), the fault injector, weak answers, "
    "Labkit.* controls",
    DYNAMODB_LOCAL: "like DynamoDB Local: no throttle, no fault injector, no weak answers, "
    "Labkit.* answered as unknown operations",
}


def _invalid(operation: str, exc: ValidationError) -> tuple[int, dict[str, Any]]:
    return 400, {"__type": C.ERROR_PREFIX + "ValidationException", "message": f"{operation}: {exc}"}


def advance_clock(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.AdvanceClock {"Seconds": n}``: move the engine's clock forward (:meth:`DynamoEngine.advance_clock`)."""
    seconds = params.get("Seconds")
    try:
        advanced = engine.advance_clock(check_non_negative("Seconds", seconds))
    except ValidationError as exc:
        return _invalid(Op.ADVANCE_CLOCK, exc)
    return 200, {"Advanced": advanced}


def set_clock(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.SetClock {"Mode": "frozen" | "real"}``: a lab takes the engine's clock (frozen: only
    ``AdvanceClock`` moves it) or gives it back (real time again, from where it stood); answers the
    mode it had (``Previous``), so whoever took it can give it back as it was (decision 140)."""
    try:
        extra = sorted(set(params) - {"Mode"})
        if extra:
            raise ValidationError(f"unknown field(s) {', '.join(extra)}; it takes only Mode")
        if "Mode" not in params:
            raise ValidationError(f"Mode is required; choose one of: {', '.join(C.CLOCK_MODES)}")
        previous = engine.set_clock(check_choice("Mode", params["Mode"], C.CLOCK_MODES))
    except ValidationError as exc:
        return _invalid(Op.SET_CLOCK, exc)
    return 200, {"Mode": engine.clock_mode, "Previous": previous}


def settle_images(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.SettleImages {}``: forget the earlier images the engine keeps (every write so far has
    propagated): a stale read after it can undo only later writes. The race lab sends it after ``setup()``."""
    history = engine.history
    return 200, {"Dropped": history.clear() if history is not None else 0}


def _expiry_table(engine: DynamoEngine, operation: str, params: dict[str, Any]) -> str | None:
    """The ``TableName`` a TTL control asks for (None: every table); a ClientFault (400) for a bad request."""
    unknown = sorted(set(params) - {"TableName"})
    if unknown:
        raise ClientFault(
            "ValidationException",
            f"{operation}: unknown parameter(s) {', '.join(map(repr, unknown))}; it takes TableName",
        )
    table = params.get("TableName")
    if table is None:
        return None
    if not isinstance(table, str) or not table:
        raise ClientFault("ValidationException", f"{operation}: TableName must be a table's name, not {table!r}")
    if not engine.has_table(table):
        raise ClientFault(
            "ResourceNotFoundException", f"{operation}: Requested resource not found: Table: {table} not found"
        )
    return table


def _fault(fault: ClientFault) -> tuple[int, dict[str, Any]]:
    return fault.status, {"__type": C.ERROR_PREFIX + fault.code, "message": fault.message}


def expire_items(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.ExpireItems {"TableName"?: name}``: DynamoDB's TTL process runs now. Every item expired by
    the engine's epoch (:meth:`DynamoEngine.epoch`) on a table with TTL on is deleted, a service delete each
    (with the stream on: a REMOVE record whose userIdentity is DynamoDB's). Answers the epoch and the counts."""
    try:
        deleted = engine.expire_items(_expiry_table(engine, Op.EXPIRE_ITEMS, params))
    except ClientFault as fault:  # a bad request (400), or the data directory could not take a deletion
        return _fault(fault)
    return 200, {"Epoch": engine.epoch(), "Deleted": deleted, "Count": sum(deleted.values())}


def describe_expiry(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.DescribeExpiry {"TableName"?: name}``: the engine's epoch (the "current time" TTL compares
    with) and, per table with TTL on, how many items are expired and not yet deleted. Deletes nothing."""
    try:
        expired = engine.expired(_expiry_table(engine, Op.DESCRIBE_EXPIRY, params))
    except ClientFault as fault:
        return _fault(fault)
    return 200, {"Epoch": engine.epoch(), "Expired": expired}


def list_replications(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.ListReplications {}``: the pending replication deliveries of global tables, oldest first: each
    write of an item, on its way from the region that took it to one other replica (decision 182)."""
    unknown = sorted(params)
    if unknown:
        return _fault(ClientFault("ValidationException", f"{Op.LIST_REPLICATIONS}: takes no parameters, not {unknown}"))
    with engine.lock:
        replication = engine.store.replication
        pending = [d.describe() for d in sorted(replication.pending.values(), key=lambda d: d.id)]
        return 200, {"Pending": pending, "Lag": replication.lag, "Now": engine.epoch()}


def deliver_replications(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.DeliverReplications {"Ids": [n, ...]} | {"All": true}``: deliver those pending deliveries, in
    that order (All: every one, oldest first); answers each one's outcome: ``applied``, ``superseded`` (last
    writer wins: the target holds a later write) or ``acknowledged`` (MRSC: applied when written)."""
    try:
        unknown = sorted(set(params) - {"Ids", "All"})
        if unknown:
            raise ValidationError(f"unknown field(s) {', '.join(unknown)}; it takes Ids or All")
        ids, every = params.get("Ids"), params.get("All")
        if (ids is None) == (every is None):
            raise ValidationError('give either Ids (a list of pending delivery ids) or "All": true')
        if every is not None and every is not True:
            raise ValidationError(f"All must be true, not {every!r}")
        if ids is not None and (
            not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
        ):
            raise ValidationError(f"Ids must be a list of pending delivery ids (integers), not {ids!r}")
        with engine.lock:
            replication = engine.store.replication
            delivered = replication.deliver(sorted(replication.pending) if every else list(ids or ()))
    except ValidationError as exc:
        return _invalid(Op.DELIVER_REPLICATIONS, exc)
    except ClientFault as fault:
        return _fault(fault)
    return 200, {"Delivered": delivered}


def set_replication_lag(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """``Labkit.SetReplicationLag {"Seconds": n | null}``: later writes are delivered at the first request once
    the engine's clock passes their write time plus ``n`` seconds (null: only when DeliverReplications asks).
    Answers the lag it had (``Previous``)."""
    try:
        unknown = sorted(set(params) - {"Seconds"})
        if unknown or "Seconds" not in params:
            raise ValidationError("it takes Seconds: a number >= 0, or null (deliver only when asked)")
        seconds = params["Seconds"]
        lag = None if seconds is None else check_non_negative("Seconds", seconds)
    except ValidationError as exc:
        return _invalid(Op.SET_REPLICATION_LAG, exc)
    with engine.lock:
        replication = engine.store.replication
        previous, replication.lag = replication.lag, lag
    return 200, {"Seconds": lag, "Previous": previous}


def regions_line(engine: DynamoEngine) -> str:
    """What ``labkit serve`` says of regions: every region is served (a request's is its credential scope);
    the regions that hold tables, global tables and deliveries pending (with ``--data``: as restored)."""
    with engine.lock:
        store, replication = engine.store, engine.store.replication
        held = {region: len(store.table_names(account, region)) for account, region in store.accounts()}
        held = {region: count for region, count in sorted(held.items()) if count}
        global_tables = len(replication.groups)
        waiting = len(replication.pending)
        offered = replication.offered
    tables = ", ".join(f"{region} ({count})" for region, count in held.items()) or "none yet"
    line = f"  regions: every region a client names (its credential scope); tables in: {tables}"
    if not offered:
        return line + "; no global tables (as DynamoDB Local)"
    lag = "only when asked" if replication.lag is None else f"{replication.lag:g} s after each write"
    return (
        line + f"; global tables: {global_tables}, deliveries pending: {waiting} (made {lag}; "
        f"{Op.LIST_REPLICATIONS}, {Op.DELIVER_REPLICATIONS})"
    )


def labkit_controls(injector: FaultInjector) -> dict[str, Control]:
    """The ``Labkit.*`` control operations of the ``labkit`` profile, by ``X-Amz-Target``."""
    return {
        **fault_controls(injector),
        Op.ADVANCE_CLOCK: advance_clock,
        Op.SETTLE_IMAGES: settle_images,
        Op.EXPIRE_ITEMS: expire_items,
        Op.DESCRIBE_EXPIRY: describe_expiry,
        Op.SET_CLOCK: set_clock,
        Op.LIST_REPLICATIONS: list_replications,
        Op.DELIVER_REPLICATIONS: deliver_replications,
        Op.SET_REPLICATION_LAG: set_replication_lag,
    }


def build_engine(
    profile: str = LABKIT,
    *,
    clock: Callable[[], float] = time.monotonic,
    faults: FaultRules | None = None,
    data: str | os.PathLike[str] | None = None,
) -> DynamoEngine:
    """An engine of ``profile`` (see :data:`PROFILES`); ``faults`` are its first fault rules.

    ``clock`` (seconds, monotonic) is the engine's time; tests and lessons inject a fake one.
    ``data``: a data directory its tables live in across restarts (None: memory only).
    """
    check_choice("profile", profile, PROFILES)
    if profile == DYNAMODB_LOCAL:
        if faults is not None:
            raise ConfigurationError(
                f"fault rules need the {LABKIT!r} profile: the {DYNAMODB_LOCAL!r} profile has no fault "
                f"injector (drop --faults, or use --profile {LABKIT})"
            )
        engine = DynamoEngine(clock, data=data)
        engine.store.replication.offered = False  # DynamoDB Local has no global tables (decision 185)
        return engine
    injector = FaultInjector(faults)
    engine = DynamoEngine(clock, controls=labkit_controls(injector), data=data, weak_answers=True)
    # The hooks, in the order the engine calls them: throttling is decided before faults.
    engine.add_hook(PartitionThrottle(settings=engine_settings(engine)))
    engine.add_hook(injector)
    return engine


def start_endpoint(
    port: int = 0,
    *,
    profile: str = LABKIT,
    engine: DynamoEngine | None = None,
    clock: Callable[[], float] = time.monotonic,
    faults: FaultRules | None = None,
    host: str = LOOPBACK,
    body_timeout: float = C.REQUEST_BODY_TIMEOUT_SECONDS,
    keep_alive: float = C.IDLE_KEEP_ALIVE_SECONDS,
    sock: socket.socket | None = None,
    data: str | os.PathLike[str] | None = None,
) -> EmbeddedEndpoint:
    """A started endpoint on ``host:port`` (port 0: any free port) serving ``engine``, or a new
    engine of ``profile`` (:func:`build_engine`). ``with start_endpoint() as ep:`` stops it after.
    ``sock``: serve on this listening socket (``bind_loopback``) instead of binding one. ``data``:
    the new engine's data directory (tables kept across restarts); stopping releases it.
    """
    if engine is None:
        engine = build_engine(profile, clock=clock, faults=faults, data=data)
    elif profile != LABKIT or faults is not None or clock is not time.monotonic or data is not None:
        raise ConfigurationError("pass either engine=... or the options to build one (profile, clock, faults, data)")
    endpoint = EmbeddedEndpoint(port, engine, host=host, body_timeout=body_timeout, keep_alive=keep_alive, sock=sock)
    return endpoint.start()


class Reservation:
    """A port bound for the shared endpoint before it runs (:func:`reserve_shared_endpoint`).

    Its URL is known at once; the engine is built and served on that socket at the first
    connection to it (a waiting thread sees it) or at the first :func:`shared_endpoint` call,
    whichever comes first. A process that never talks to DynamoDB never builds one.
    """

    def __init__(self) -> None:
        self.sock = bind_loopback(LOOPBACK, 0)
        self.url = f"http://{LOOPBACK}:{self.sock.getsockname()[1]}"
        self._wake, self._waker = socket.socketpair()
        self._thread = threading.Thread(target=self._wait, name="labkit-endpoint-reserved", daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        try:
            ready, _, _ = select.select([self.sock, self._wake], [], [])
        except (OSError, ValueError):  # closed under us: nothing to wait for
            return
        if self.sock in ready:
            try:
                shared_endpoint()  # serves this socket: the waiting connection is answered
            except Exception:
                self.sock.close()  # the client sees its connection closed, not a hang

    def taken(self) -> None:
        """The endpoint now serves the socket: stop waiting."""
        with contextlib.suppress(OSError):
            self._waker.send(b"x")


_shared: EmbeddedEndpoint | None = None
_reserved: Reservation | None = None
_shared_lock = threading.Lock()


def shared_endpoint() -> EmbeddedEndpoint:
    """The process-wide endpoint (``labkit`` profile), started on first use: ``connect()``'s embedded backend.

    It serves the reserved port when :func:`reserve_shared_endpoint` reserved one.
    """
    global _shared, _reserved
    with _shared_lock:
        if _shared is None or not _shared.running:
            reserved, _reserved = _reserved, None
            _shared = start_endpoint(sock=reserved.sock if reserved is not None else None)
            if reserved is not None:
                reserved.taken()
        return _shared


def reserve_shared_endpoint() -> str:
    """The URL the shared endpoint has (or will have): a port is bound now, the engine starts when used.

    The pytest plugin needs the URL before conftest files and test modules are imported (their
    clients read ``AWS_ENDPOINT_URL_DYNAMODB`` when created) and must not pay for an engine in a
    run that never talks to DynamoDB.
    """
    global _reserved
    with _shared_lock:
        if _shared is not None and _shared.running:
            return _shared.url
        if _reserved is None:
            _reserved = Reservation()
        return _reserved.url


__all__ = [
    "DYNAMODB_LOCAL",
    "LABKIT",
    "PROFILES",
    "Reservation",
    "advance_clock",
    "build_engine",
    "describe_expiry",
    "expire_items",
    "labkit_controls",
    "regions_line",
    "reserve_shared_endpoint",
    "set_clock",
    "shared_endpoint",
    "start_endpoint",
]
