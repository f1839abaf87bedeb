"""The race lab: force an interleaving of DynamoDB calls, try every one, or just stress.

A race is *forced*, not hoped for. Each actor runs on its own thread, bound to it, and every
DynamoDB call made on that thread — on a ``boto3.client``, a ``boto3.resource(...).Table(...)``,
a PynamoDB model, a client created at import time, or on threads the actor starts — passes one
interception point (``intercept``: botocore's client call, wrapped once per process), which hooks
the client's events on first sight:

``before-call.dynamodb``
    the call waits until it is that actor's turn in the order (a
    ``threading.Condition``; no sleeps) — then its HTTP request goes out;
``after-call.dynamodb`` / ``after-call-error.dynamodb``
    the call is recorded in the history and the next turn is granted. The first
    fires for every answer, DynamoDB errors included; the second for connection errors.

An actor is ``fn(client)`` — it gets a fresh client with botocore's retries off, so one turn is
exactly one HTTP request — or ``fn()``, using its own clients: their retries stay on, a turn is
one API call with the SDK's retries inside it, and the history's ``retries`` column counts them.
The retries an actor's own code makes are ordinary calls. Calls beyond the order run freely once
the order is exhausted. Calls from threads bound to no actor (setup, the invariant, the test
body) pass ungated. What cannot be gated is refused with :class:`~labkit.shared.errors.RaceError`: a
client for another endpoint than the lab's (nothing is sent), an aiobotocore call, a request that
bypassed botocore's client call, a call from a thread an actor left running after its run.

An actor that ends with a DynamoDB error (``ClientError`` or one of labkit's
:data:`~labkit.shared.errors.OUTCOME_ERRORS`, e.g. ``ConditionalCheckFailedException`` or
``ValueTaken``) has produced an *outcome*: it lands in ``res.errors``. An order that cannot
be followed — an unknown actor, an actor that returns or fails before taking all its turns,
an actor that raises anything else, a turn not taken within ``timeout`` — raises
:class:`~labkit.shared.errors.RaceError` and never hangs.

Threads and pool tasks an actor starts are *sub-actors* (``A.1``, ``A.2`` in start order) with
turns of their own: the gate chooses who goes next only when every thread of the run stands
still, so a run never depends on which thread the operating system ran first.

Modules, lowest first: ``types`` (actor and op types), ``keys`` (call keys, for people),
``identity`` (which items a call touches, from the table's key schema), ``history`` (the
history frame and the checks on it: overwrites, lost updates), ``tasks`` (a run's tasks: actors
and sub-actors, their states and clocks), ``sessions`` (what a run does with a call: the contract,
the stress tally), ``choosers`` (who goes next in one run: the ``Chooser`` protocol, the given order),
``gate`` (the forced run: hold each call until chosen, record it), ``interleave`` (one forced order),
``orders`` (counting and enumerating orders; every order), ``stress`` (threads/processes,
sweeps); then :func:`explore`: ``calls`` (an explored run's calls, conflicts, and the
``Scheduler`` protocol: who goes next, run after run), ``runner`` (the loop, and the one place an
explored schedule runs) and ``strategies`` (the schedulers: exhaustive, DPOR, PCT, and the
portfolio) — the last two never import each other — ``scenarios`` (the faults explore places at
each call point), ``shrink`` (the smallest counterexample), ``replay`` (reading replay files),
``anomalies`` (what a history shows with no invariant: a lost update, a check-then-write duplicate, ...),
``exploration`` (the verdict, the replay file it writes, the listeners told of it) and ``explore``
(gives each scheduler its share, builds the verdict). The interception point and the call record
are on the floor (:mod:`labkit.shared.intercept`). The race lab imports no lesson; lessons import nothing from here.

The race lab works on any actor: it never imports a pattern or the engine.

May import: shared, engine_plugins.
"""

from __future__ import annotations

from ..shared.errors import error_code
from .anomalies import ANOMALIES, Anomaly
from .explore import Exploration, ExploreConfig, add_listener, explore, remove_listener
from .history import HISTORY_COLUMNS
from .interleave import Interleaving, parse_order, run_interleaving
from .keys import call_key
from .orders import all_interleavings, count_calls, count_orders, interleavings
from .replay import Replay, load
from .stress import STRESS_COLUMNS, stress, sweep

__all__ = [
    "ANOMALIES",
    "Anomaly",
    "Exploration",
    "ExploreConfig",
    "HISTORY_COLUMNS",
    "Interleaving",
    "Replay",
    "STRESS_COLUMNS",
    "add_listener",
    "all_interleavings",
    "call_key",
    "count_calls",
    "count_orders",
    "error_code",
    "explore",
    "interleavings",
    "load",
    "parse_order",
    "remove_listener",
    "run_interleaving",
    "stress",
    "sweep",
]
