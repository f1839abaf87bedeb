"""The client of labkit-only control operations (``X-Amz-Target: Labkit.<name>``).

A notebook switches the endpoint's fault rules, reads its fault log, holds a transaction or
takes and moves the engine's clock (:func:`lab_clock`) with the helpers below; the embedded endpoint of the ``labkit``
profile answers them (loopback only, because it listens nowhere else; the handlers are in
:mod:`labkit.engine_plugins.faults.injector` and :mod:`labkit.embedded`). Client side: plain HTTP, no engine.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ...shared import constants as C
from ...shared.catalogue import CONTROL_PREFIX, CONTROLS, Op
from ...shared.errors import ConfigurationError, ValidationError
from ...shared.validation import check_non_negative
from .rules import FaultRules

if TYPE_CHECKING:
    from ...shared.backend import Connection

#: The control operations the ``labkit`` profile's endpoint answers, without their ``Labkit.`` prefix.
CONTROL_OPERATIONS = tuple(sorted(Op(name).short for name in CONTROLS))


#: Each thread's open connections to the endpoints it controls, by (host, port), with when each was last
#: used: a run of the race lab makes a few control calls (settling replication and images), and a new
#: connection each cost more than the call (decision 230).
_OPEN = threading.local()
#: A kept connection idle longer than this is not reused: labkit's endpoint closes one idle for
#: ``IDLE_KEEP_ALIVE_SECONDS`` (30 s), and a request must never meet that close on the way.
REUSE_IDLE_SECONDS: Final = C.IDLE_KEEP_ALIVE_SECONDS / 3


def _connection(host: str, port: int, timeout: float) -> http.client.HTTPConnection:
    """This thread's kept connection to ``host:port``; a new one when it has none, it idled past
    :data:`REUSE_IDLE_SECONDS`, or the server closed it (something to read before our request: its close)."""
    pool: dict[tuple[str, int], tuple[http.client.HTTPConnection, float]] = _OPEN.__dict__.setdefault("pool", {})
    kept, used = pool.pop((host, port), (None, 0.0))
    if kept is not None and kept.sock is not None and time.monotonic() - used < REUSE_IDLE_SECONDS:
        readable, _, _ = select.select([kept.sock], [], [], 0)
        if not readable:
            kept.sock.settimeout(timeout)
            return kept
    if kept is not None:
        kept.close()
    return http.client.HTTPConnection(host, port, timeout=timeout)


def _post(url: str, target: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    """POST ``body`` to ``url`` on this thread's kept connection: the status and the answer's body.

    Sent once: an error (the server gone, a timeout) drops the connection and is raised, never resent
    (a control call is not always idempotent: DeliverReplications)."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    conn = _connection(host, port, timeout)
    try:
        conn.request(
            "POST", parts.path or "/", body=body, headers={"X-Amz-Target": target, "Content-Type": C.JSON_CONTENT_TYPE}
        )
        answer = conn.getresponse()
        raw = answer.read()
    except (OSError, http.client.HTTPException):
        conn.close()
        raise
    if answer.will_close:
        conn.close()
    else:
        _OPEN.pool[(host, port)] = (conn, time.monotonic())
    return answer.status, raw


def control(url: str, operation: str, payload: Mapping[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """POST one ``Labkit.<operation>`` control request (``Op.SET_FAULTS``, or its short name) to ``url``."""
    target = operation if operation.startswith(CONTROL_PREFIX) else CONTROL_PREFIX + operation
    operation = target.removeprefix(CONTROL_PREFIX)
    status, raw = _post(url, target, json.dumps(payload).encode("utf-8"), timeout)
    if status < 300:
        return dict(json.loads(raw or b"{}"))
    body = json.loads(raw or b"{}")
    unknown = str(body.get("__type", "")).endswith("#UnknownOperationException")
    if unknown and operation in CONTROL_OPERATIONS:  # one labkit's endpoint answers: not this one
        raise ConfigurationError(
            f"the endpoint at {url} does not answer {target}: it is not labkit's "
            "embedded endpoint with its defaults (e.g. `labkit serve --profile dynamodb-local`, DynamoDB "
            "Local or AWS); use the race lab's per-call faults (run_interleaving(..., faults=[...])), "
            "which act in the client"
        )
    raise ValidationError(str(body.get("message") or body))


def _endpoint(
    conn: Connection,
    needs: str = "endpoint faults need",
    elsewhere: str = "; on DynamoDB Local or AWS use the race lab's per-call faults (run_interleaving(..., "
    "faults=[...])), which act in the client",
) -> str:
    """The embedded endpoint's URL; a ConfigurationError saying what ``needs`` it and what to do ``elsewhere``."""
    if conn.backend != "embedded" or not conn.endpoint_url:
        raise ConfigurationError(
            f"{needs} labkit's embedded endpoint, and this connection is {conn.backend!r}{elsewhere}"
        )
    return conn.endpoint_url


def need_weak_answers(conn: Connection, names: Sequence[str]) -> None:
    """The ConfigurationError endpoint faults give, for weak answers on a backend that cannot give them.

    A stale read, unprocessed items and a short page are answered by the engine from its state
    (its earlier images, its pages), so only labkit's embedded endpoint can give them on purpose.
    """
    if names and (conn.backend != "embedded" or not conn.endpoint_url):
        raise ConfigurationError(
            f"{', '.join(names)} need labkit's embedded endpoint (profile labkit), and this connection is "
            f"{conn.backend!r}: DynamoDB Local and AWS give these answers only by chance, never on purpose. "
            "Run this exploration on the embedded endpoint (LABKIT_BACKEND unset, or labkit_conn in a test), "
            "or leave these faults out here; nothing was run"
        )


def settle_images(conn: Connection) -> None:
    """The embedded endpoint forgets the earlier images it keeps: every write so far has propagated.

    The race lab calls it after ``setup()`` before a run with a stale read, so the stale read sees
    the writes of its own run and never the image before setup's (the previous run's state).
    """
    url = _endpoint(conn)
    try:
        control(url, Op.SETTLE_IMAGES, {})
    except ConfigurationError:
        raise ConfigurationError(
            f"stale-read needs labkit's embedded endpoint with profile labkit, and the endpoint at {url} keeps "
            "no earlier images (e.g. `labkit serve --profile dynamodb-local`): it gives no weak answers. "
            "Use the default profile, or leave the fault out; nothing was run"
        ) from None


def set_endpoint_faults(
    conn: Connection,
    rules: FaultRules | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None,
) -> FaultRules:
    """Switch the endpoint's fault rules (None or [] switches them off); checked here first."""
    parsed = rules if isinstance(rules, FaultRules) else FaultRules.parse(rules or [], "rules")
    control(_endpoint(conn), Op.SET_FAULTS, parsed.as_dict())
    return parsed


@contextlib.contextmanager
def endpoint_faults(
    conn: Connection,
    rules: FaultRules | Sequence[Mapping[str, Any]] | Mapping[str, Any],
) -> Iterator[FaultRules]:
    """``with endpoint_faults(conn, [...]):`` — the rules hold inside the block only."""
    parsed = set_endpoint_faults(conn, rules)
    try:
        yield parsed
    finally:
        set_endpoint_faults(conn, None)


def endpoint_fault_log(conn: Connection) -> list[dict[str, Any]]:
    """Faults the endpoint injected (oldest first): operation, error, status, applied, keys."""
    return list(control(_endpoint(conn), Op.GET_FAULTS, {})["Log"])


def advance_clock(conn: Connection, seconds: float) -> float:
    """Move the endpoint's clock forward (e.g. past DynamoDB's 10 minutes for ClientRequestTokens).

    The engine's clock dates ClientRequestTokens and is the time its hooks see; returns the
    total advance so far, in seconds.
    """
    return float(control(_endpoint(conn), Op.ADVANCE_CLOCK, {"Seconds": seconds})["Advanced"])


def _ttl_endpoint(conn: Connection) -> str:
    return _endpoint(
        conn,
        "deleting expired items when the lab says needs",
        ": on AWS DynamoDB's TTL process deletes them in its own time (typically within a few days), and "
        "DynamoDB Local does not support TTL",
    )


def expire_items(conn: Connection, table: str | None = None) -> dict[str, Any]:
    """DynamoDB's TTL process runs now (``Labkit.ExpireItems``): every item expired by the lab's clock
    is deleted, a service delete each. ``table``: that table only. Answers ``{"Epoch": ..., "Deleted":
    {table: n}, "Count": n}``."""
    return control(_ttl_endpoint(conn), Op.EXPIRE_ITEMS, {} if table is None else {"TableName": table})


def describe_expiry(conn: Connection, table: str | None = None) -> dict[str, Any]:
    """``Labkit.DescribeExpiry``: the lab's time in epoch seconds (what TTL compares with) and, per table
    with TTL on, how many items are expired and not yet deleted: ``{"Epoch": ..., "Expired": {table: n}}``."""
    return control(_ttl_endpoint(conn), Op.DESCRIBE_EXPIRY, {} if table is None else {"TableName": table})


def _replication_endpoint(conn: Connection) -> str:
    return _endpoint(
        conn,
        "global tables' deliveries made when the lab says need",
        ": on AWS DynamoDB replicates in its own time (typically within a second), and DynamoDB Local has no "
        "global tables",
    )


def replications(conn: Connection) -> list[dict[str, Any]]:
    """``Labkit.ListReplications``: the global tables' pending deliveries, oldest first (``Id``, ``TableName``,
    ``Key``, ``From``, ``To``, ``WriteTime``, ``Due``, ...; docs/reference.md)."""
    return list(control(_replication_endpoint(conn), Op.LIST_REPLICATIONS, {})["Pending"])


def deliver_replications(conn: Connection, ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """``Labkit.DeliverReplications``: make these pending deliveries in this order (None: every one, oldest
    first); each one's ``Outcome``: ``applied``, ``superseded`` (last writer wins) or ``acknowledged`` (MRSC)."""
    payload: dict[str, Any] = {"All": True} if ids is None else {"Ids": list(ids)}
    return list(control(_replication_endpoint(conn), Op.DELIVER_REPLICATIONS, payload)["Delivered"])


def set_replication_lag(conn: Connection, seconds: float | None) -> float | None:
    """``Labkit.SetReplicationLag``: later writes are delivered at the first request once the lab's clock passes
    their write time plus ``seconds`` (0: at once, as if synchronous; None: only :func:`deliver_replications`);
    returns the lag it had."""
    previous = control(_replication_endpoint(conn), Op.SET_REPLICATION_LAG, {"Seconds": seconds})["Previous"]
    return None if previous is None else float(previous)


def lab_epoch(conn: Connection) -> float:
    """The lab's time as Unix epoch seconds: what the embedded endpoint's TTL compares an item's TTL with
    (the wall clock when it started, plus its clock since, ``Labkit.AdvanceClock`` included)."""
    return float(describe_expiry(conn)["Epoch"])


def set_lab_clock(conn: Connection, mode: str) -> str:
    """Freeze the endpoint's clock (``"frozen"``: only :func:`advance_clock` or a :class:`LabClock`
    moves it) or let it follow real time again (``"real"``); returns the mode it had."""
    return str(control(_endpoint(conn), Op.SET_CLOCK, {"Mode": mode})["Previous"])


class LabClock:
    """The endpoint's clock while a lab owns it (:func:`lab_clock`): frozen, moved only by this object.

    ``elapsed`` is the lab seconds it was moved since it was taken; :meth:`advance` moves it by some
    seconds, :meth:`at` to an instant counted from the take-over (a storm's planned arrival times).
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.elapsed = 0.0

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0); returns ``elapsed``."""
        seconds = check_non_negative("seconds", seconds)
        if seconds:
            advance_clock(self.conn, seconds)
            self.elapsed += seconds
        return self.elapsed

    def at(self, instant: float) -> float:
        """Move the clock to ``instant`` lab seconds after it was taken (never back); returns ``elapsed``."""
        instant = check_non_negative("instant", instant)
        if instant < self.elapsed:
            raise ValidationError(
                f"the lab clock is at {self.elapsed:g} s and never goes back; {instant:g} s is earlier"
            )
        if instant > self.elapsed:
            advance_clock(self.conn, instant - self.elapsed)
            self.elapsed = instant
        return self.elapsed


@contextlib.contextmanager
def lab_clock(conn: Connection) -> Iterator[LabClock]:
    """``with lab_clock(conn) as clock:`` — the endpoint's clock stands still inside the block and moves
    only when ``clock.advance(seconds)`` or ``clock.at(instant)`` moves it, never by sleeping; after the
    block it is given back as it was (real time goes on from where the lab left it; it never goes back).

    Every time-based behaviour of the embedded endpoint reads this one clock: partition buckets and
    throttling, the ClientRequestToken window. Embedded endpoint (profile ``labkit``) only.
    """
    previous = set_lab_clock(conn, C.CLOCK_FROZEN)
    try:
        yield LabClock(conn)
    finally:
        if previous != C.CLOCK_FROZEN:
            set_lab_clock(conn, previous)
