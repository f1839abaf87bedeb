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

An actor that ends with a DynamoDB error (``ClientError`` or one of labkit's
:data:`~labkit.errors.OUTCOME_ERRORS`, e.g. ``ConditionalCheckFailedException`` or
``ValueTaken``) has produced an *outcome*: it lands in ``res.errors``. An order that cannot
be followed — an unknown actor, an actor that returns or fails before taking all its turns,
an actor that raises anything else, a turn not taken within ``timeout`` — raises
:class:`~labkit.errors.RaceError` and never hangs.

Actors must make their DynamoDB calls with the client they are given; calls made on
any other client are neither gated nor recorded.

Modules, lowest first: ``types`` (actor and op types), ``keys`` (call keys), ``history`` (the
history frame and the checks on it: overwrites, lost updates), ``gate`` (hooks that record and hold
calls), ``interleave`` (one forced order), ``orders`` (counting and enumerating orders; every
order), ``stress`` (threads/processes, sweeps); then :func:`explore`: ``calls`` (an explored run's
calls, conflicts, and the ``OrderRunner`` protocol), ``runner`` (the one place an explored order
runs) and ``strategies`` (exhaustive, DPOR, PCT) — the last two never import each other — and
``explore`` (picks a strategy, builds the verdict). The race lab imports no lesson; lessons import
nothing from here.
"""

from __future__ import annotations

from ..errors import error_code
from .explore import Exploration, explore
from .history import HISTORY_COLUMNS
from .interleave import Interleaving, parse_order, run_interleaving
from .keys import call_key
from .orders import all_interleavings, count_calls, count_orders, interleavings
from .stress import STRESS_COLUMNS, stress, sweep

__all__ = [
    "Exploration",
    "HISTORY_COLUMNS",
    "Interleaving",
    "STRESS_COLUMNS",
    "all_interleavings",
    "call_key",
    "count_calls",
    "count_orders",
    "error_code",
    "explore",
    "interleavings",
    "parse_order",
    "run_interleaving",
    "stress",
    "sweep",
]
