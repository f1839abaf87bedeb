"""What the engine runs besides DynamoDB: default hooks, and labkit's control operations.

Both live outside the engine and import :mod:`labkit.endpoint.hooks`, so they are imported when
an engine is built or a control request arrives, never when this package is imported.

* default hooks: :class:`labkit.throughput.PartitionThrottle` without a scale, which acts only on
  tables tagged ``labkit:partition-scale`` (a hot key throttles there; other tables never do);
* control operations: ``X-Amz-Target: Labkit.<name>`` (``SetFaults``, ``GetFaults``,
  ``HoldTransaction``, ``ReleaseTransaction``, ``AdvanceClock``), answered by
  :func:`labkit.faults.handle_control` under the engine's lock. The endpoint listens on
  127.0.0.1 only, so only this machine can send them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .encode import Response, error_response, response
from .hooks import Hook

if TYPE_CHECKING:
    from .engine import DynamoEngine

#: ``X-Amz-Target`` prefix of labkit-only control operations.
CONTROL_PREFIX = "Labkit."


def default_hooks(engine: DynamoEngine) -> list[Hook]:
    """The hooks every engine starts with (``DynamoEngine(hooks=None)``)."""
    from ..throughput import PartitionThrottle, engine_settings

    return [PartitionThrottle(settings=engine_settings(engine))]


def control(engine: DynamoEngine, operation: str, body: bytes) -> Response:
    """Answer one ``Labkit.<operation>`` request (the caller holds the engine's lock)."""
    from ..faults import handle_control

    try:
        params: Any = json.loads(body or b"{}")
    except ValueError:
        params = None
    if not isinstance(params, dict):
        return error_response("SerializationException", "a Labkit.* control request's body must be a JSON object")
    status, payload = handle_control(engine, operation, params)
    return response(status, payload)


__all__ = ["CONTROL_PREFIX", "control", "default_hooks"]
