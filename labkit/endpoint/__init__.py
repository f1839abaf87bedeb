"""The embedded DynamoDB endpoint: moto's DynamoDB behind a small HTTP server on 127.0.0.1.

A request flows through the engine (:mod:`.engine`) stage by stage, each stage in a room::

    wire (server -> decode)  ->  checks (shapes, the operation's check)  ->  hooks.before
        ->  store.idempotency  ->  store (moto_store, atomic, under the engine's lock; the
            engine's own conditions, filters and projections: expressions)  ->  metering
        ->  hooks.after  ->  wire (encode)

What one operation adds to those stages is its module in :mod:`.operations` (``GetItem`` ->
``operations/get_item.py``), found from the catalogue (:mod:`labkit.shared.catalogue`). The engine's
errors are :mod:`.errors` (``ClientFault``); what a validated request touches is :mod:`.plan`.
Only :mod:`.store.moto_adapter` (the one door to moto) imports moto. The engine imports no plug-in:
it is handed its hooks and ``Labkit.*`` control operations, and :mod:`labkit.embedded` (the composition root) lists
labkit's defaults and builds engines and endpoints. Every request is applied under one lock, so
a condition check and its write never interleave with another request and a cancelled
transaction leaves nothing behind. The store lives in memory: stopping the process loses it.

The engine core, a layer of rooms (docs/architecture.md draws them); it imports no plug-in.

May import: shared.
"""

from __future__ import annotations

from ..shared.engine_hooks import Hook, Rejection, RequestInfo
from .engine import Control, DynamoEngine
from .wire.server import LOOPBACK, EmbeddedEndpoint, bind_loopback

__all__ = [
    "LOOPBACK",
    "Control",
    "DynamoEngine",
    "EmbeddedEndpoint",
    "Hook",
    "Rejection",
    "RequestInfo",
    "bind_loopback",
]
