"""The embedded DynamoDB endpoint: moto's DynamoDB behind a small HTTP server on 127.0.0.1.

A request flows through one module per step (see ``docs/decisions.md``)::

    server  ->  decode  ->  validate (shapes, values, expressions, updates)  ->  hooks.before
            ->  idempotency  ->  apply (moto, atomic, under the engine's lock; the engine's own
                conditions, filters and projections: evaluate, rewrite)  ->  meter
            ->  hooks.after  ->  encode

Only :mod:`labkit.endpoint.apply` imports moto. The engine imports no plug-in: it is handed
its hooks and ``Labkit.*`` control operations, and :mod:`labkit.embedded` (the composition root)
lists labkit's defaults and builds engines and endpoints. Every request is applied under one lock, so a
condition check and its write never interleave with another request and a cancelled
transaction leaves nothing behind. The store lives in memory: stopping the process loses it.
"""

from __future__ import annotations

from ..engine_hooks import Hook, Rejection, RequestInfo
from .engine import Control, DynamoEngine
from .server import LOOPBACK, EmbeddedEndpoint, bind_loopback

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
