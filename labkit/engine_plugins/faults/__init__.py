"""Faults on purpose: DynamoDB's failures, injected at an exact point or by rule.

Two levels, one set of error answers (:func:`rejection`). The client side — ``answers``
(DynamoDB's error answers), ``kinds`` (the faults and their notation), ``race`` (faults in the
race lab), ``rules`` (endpoint rules, checked before they are sent), ``control`` (the client of
the ``Labkit.*`` operations) — imports no engine module. The endpoint side, ``injector`` (the
:class:`FaultInjector` hook and the handlers of those operations), is an engine plug-in that
:mod:`labkit.embedded` installs; it talks to the engine through :mod:`labkit.shared.engine_hooks`.
The race lab imports this package; it imports no lesson and no race lab.

**Race lab, per actor and per call** (client side, any backend)::

    run_interleaving(actors, "A B A B", conn=conn,
                     faults=["B2: lose-response", "A1: transaction-conflict"])
    # or faults={"B": {2: LoseResponse()}, "A": {1: Conflict()}}

A fault lands on an actor's N-th DynamoDB call (1-based) inside botocore's send loop
(``before-send``), so botocore handles it exactly as it would handle DynamoDB's answer:

=====================  ==================================================================
``lose-response``      the real request is sent and applied, then the client raises
                       ``ReadTimeoutError`` (``LoseResponse("connection-closed")``:
                       ``ConnectionClosedError``) — the answer never arrives
``transaction-conflict``  answered without writing: a TransactWriteItems gets
                       ``TransactionCanceledException`` with ``TransactionConflict`` at
                       action ``item`` and ``None`` elsewhere; a single-item write gets
                       ``TransactionConflictException``
``throttle``           ``ProvisionedThroughputExceededException`` (``throttling-exception``:
                       ``ThrottlingException``), nothing written
``internal-error``     HTTP 500 ``InternalServerError``, nothing written
                       (``internal-error-applied``: written, then the 500)
``hold``               a TransactWriteItems is *in flight*: at its turn the endpoint locks its
                       items (a real request), the turn passes, and it commits at the actor's
                       next turn. Competing writes in between get what DynamoDB gives.
                       Embedded endpoint only.
``stale-read``         an eventually consistent read (GetItem, BatchGetItem, Query, Scan
                       without ``ConsistentRead=True``; a GSI query) answered as of before
                       the most recent write to what it reads — the reader's own included
``unprocessed-items``  a BatchWriteItem or BatchGetItem answered 200 with its last item in
                       ``UnprocessedItems`` / ``UnprocessedKeys``: not applied, not read
``short-page``         a Query or Scan page that ends after its first item, with a
                       ``LastEvaluatedKey`` (a filtered page may come back empty)
=====================  ==================================================================

The last three are DynamoDB's *weak answers*: real answers from the engine's state, asked for
with the request header ``X-Labkit-Weak-Answer`` (labkit's embedded endpoint, profile
``labkit``; elsewhere a ConfigurationError before anything runs). Each applies only where
DynamoDB can give it; placed on another call (``"B2: stale-read"`` on a ConsistentRead), the
run stops at that call with a ValidationError saying where each kind applies, and the call is
not sent.

Every injected fault is named in the race lab's history (column ``injected``).

**Embedded endpoint, by rule** (:class:`FaultRules`, :class:`FaultInjector` — an engine
hook): operation, table, partition key, error, probability (seeded), count, apply_first.
``labkit serve --faults FILE`` loads a JSON file (:func:`load_rules`); a notebook whose
kernel talks to a shared endpoint switches rules on and off with
:func:`set_endpoint_faults` / :func:`endpoint_faults`, through labkit-only control
operations (``X-Amz-Target: Labkit.SetFaults``...) that the endpoint answers on
127.0.0.1 only, because it listens nowhere else. JSON format::

    {"seed": 7,
     "rules": [{"operation": "PutItem", "table": "labkit-faults", "key": "ACCT#1",
                "error": "ProvisionedThroughputExceededException",
                "probability": 0.5, "count": 3, "apply_first": false}]}

Only ``operation`` and ``error`` are required (``"*"`` matches any data-plane operation);
``probability`` defaults to 1, ``count`` (how many times the rule fires) to unlimited.

``error`` may also name one of DynamoDB's weak answers (:class:`labkit.shared.catalogue.WeakAnswer`,
:mod:`labkit.endpoint.weak`): a 200 that is not the strong, whole, full answer —
``stale-read`` (an eventually consistent GetItem, BatchGetItem, Query or Scan, or any read of a
GSI, answered as of before the latest write to what it reads), ``unprocessed-items`` (a
BatchWriteItem or BatchGetItem leaves its last item in ``UnprocessedItems`` / ``UnprocessedKeys``),
``short-page`` (a Query or Scan page ends after its first item, with a ``LastEvaluatedKey``),
``torn-read`` (a BatchGetItem, Query or Scan sees some of a recent TransactWriteItems' writes and
not others). A weak answer's named view is a rule's ``error`` too (``"stale-read; behind=2"``,
``"torn-read; misses={...}"``: the header's forms, docs/reference.md). Such a rule fires only
where DynamoDB can give it (``"*"`` included; never a stale read with ``ConsistentRead=True``); a
rule naming another operation is refused::

    {"rules": [{"operation": "GetItem", "table": "orders", "error": "stale-read", "probability": 0.2}]}
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

# Imported now, not on first use: the submodule's own name is also one of its functions (control()), and
# an import of the submodule would otherwise leave the package's ``control`` naming the module.
from .control import (
    CONTROL_OPERATIONS,
    LabClock,
    advance_clock,
    control,
    deliver_replications,
    describe_expiry,
    endpoint_fault_log,
    endpoint_faults,
    expire_items,
    lab_clock,
    lab_epoch,
    replications,
    set_endpoint_faults,
    set_lab_clock,
    set_replication_lag,
)

# What the lazy names below are, for type checkers only (not imported at run time); `X as X` re-exports X.
if _typing.TYPE_CHECKING:
    from .answers import CONFLICTABLE as CONFLICTABLE
    from .answers import ERRORS as ERRORS
    from .answers import OPERATIONS as OPERATIONS
    from .answers import cancelled as cancelled
    from .answers import conflict_reasons as conflict_reasons
    from .answers import error_body as error_body
    from .answers import rejection as rejection
    from .injector import FaultInjector as FaultInjector
    from .injector import fault_controls as fault_controls
    from .kinds import FAULT_NAMES as FAULT_NAMES
    from .kinds import WEAK_ANSWERS as WEAK_ANSWERS
    from .kinds import Conflict as Conflict
    from .kinds import Fault as Fault
    from .kinds import FaultSpec as FaultSpec
    from .kinds import Hold as Hold
    from .kinds import LoseResponse as LoseResponse
    from .kinds import ServerError as ServerError
    from .kinds import ShortPage as ShortPage
    from .kinds import StaleRead as StaleRead
    from .kinds import Throttle as Throttle
    from .kinds import TornRead as TornRead
    from .kinds import TtlDelete as TtlDelete
    from .kinds import UnprocessedItems as UnprocessedItems
    from .kinds import WeakAnswerFault as WeakAnswerFault
    from .kinds import parse_faults as parse_faults
    from .race import FaultPlan as FaultPlan
    from .race import canned_response as canned_response
    from .race import inject as inject
    from .race import plan_for as plan_for
    from .rules import FaultRule as FaultRule
    from .rules import FaultRules as FaultRules
    from .rules import load_rules as load_rules

#: Each lazy public name -> the submodule that defines it. They are imported on first use (PEP 562
#: ``__getattr__``): the endpoint side (``labkit serve``, the plugin's endpoint) imports the injector and
#: the rules and the control client only, not the race lab's faults and their notation (decision 227).
_LAZY: dict[str, str] = {
    "CONFLICTABLE": "answers",
    "ERRORS": "answers",
    "OPERATIONS": "answers",
    "cancelled": "answers",
    "conflict_reasons": "answers",
    "error_body": "answers",
    "rejection": "answers",
    "FaultInjector": "injector",
    "fault_controls": "injector",
    "FAULT_NAMES": "kinds",
    "WEAK_ANSWERS": "kinds",
    "Conflict": "kinds",
    "Fault": "kinds",
    "FaultSpec": "kinds",
    "Hold": "kinds",
    "LoseResponse": "kinds",
    "ServerError": "kinds",
    "ShortPage": "kinds",
    "StaleRead": "kinds",
    "Throttle": "kinds",
    "TornRead": "kinds",
    "TtlDelete": "kinds",
    "UnprocessedItems": "kinds",
    "WeakAnswerFault": "kinds",
    "parse_faults": "kinds",
    "FaultPlan": "race",
    "canned_response": "race",
    "inject": "race",
    "plan_for": "race",
    "FaultRule": "rules",
    "FaultRules": "rules",
    "load_rules": "rules",
}


def __getattr__(name: str) -> _typing.Any:
    """Import a public name's submodule on first use (PEP 562), and keep the name here after."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CONFLICTABLE",
    "CONTROL_OPERATIONS",
    "Conflict",
    "ERRORS",
    "FAULT_NAMES",
    "Fault",
    "FaultInjector",
    "FaultPlan",
    "FaultRule",
    "FaultRules",
    "FaultSpec",
    "Hold",
    "LabClock",
    "LoseResponse",
    "OPERATIONS",
    "ServerError",
    "ShortPage",
    "StaleRead",
    "Throttle",
    "TornRead",
    "TtlDelete",
    "UnprocessedItems",
    "WEAK_ANSWERS",
    "WeakAnswerFault",
    "advance_clock",
    "cancelled",
    "canned_response",
    "conflict_reasons",
    "control",
    "deliver_replications",
    "describe_expiry",
    "endpoint_fault_log",
    "endpoint_faults",
    "error_body",
    "expire_items",
    "fault_controls",
    "inject",
    "lab_clock",
    "lab_epoch",
    "load_rules",
    "parse_faults",
    "plan_for",
    "rejection",
    "replications",
    "set_endpoint_faults",
    "set_lab_clock",
    "set_replication_lag",
]
