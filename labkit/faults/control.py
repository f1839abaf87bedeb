"""Labkit-only control operations (``X-Amz-Target: Labkit.<name>``) and their client helpers.

The embedded endpoint answers them (loopback only, because it listens nowhere else) through
:func:`handle_control`; a notebook switches fault rules, reads the fault log, holds a
transaction or moves the token clock with the helpers below.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ValidationError
from .rules import FaultInjector, FaultRules, Held
from .shapes import ERROR_PREFIX

if TYPE_CHECKING:
    from ..backend import Connection
    from ..endpoint.engine import DynamoEngine

CONTROL_OPERATIONS = ("SetFaults", "GetFaults", "HoldTransaction", "ReleaseTransaction", "AdvanceClock")


def injector_of(engine: DynamoEngine) -> FaultInjector:
    """The engine's FaultInjector, added as a hook on first use."""
    for hook in engine.hooks:
        if isinstance(hook, FaultInjector):
            return hook
    injector = FaultInjector()
    engine.add_hook(injector)
    return injector


class _ShiftedClock:
    def __init__(self, base: Callable[[], float], offset: float) -> None:
        self.base, self.offset = base, offset

    def __call__(self) -> float:
        return self.base() + self.offset


def handle_control(
    engine: DynamoEngine, operation: str, params: Mapping[str, Any] | None
) -> tuple[int, dict[str, Any]]:
    """Answer a ``Labkit.*`` control request: (HTTP status, JSON payload). Runs under the engine lock."""

    def bad(message: str) -> tuple[int, dict[str, Any]]:
        return 400, {"__type": ERROR_PREFIX + "ValidationException", "message": message}

    if params is None:
        return bad("the request body must be a JSON object")
    if operation not in CONTROL_OPERATIONS:
        return bad(
            f"unknown labkit control operation {operation!r}; use one of "
            f"{', '.join('Labkit.' + o for o in CONTROL_OPERATIONS)}"
        )
    injector = injector_of(engine)
    if operation == "SetFaults":
        try:
            injector.set_rules(FaultRules.parse(params, "Labkit.SetFaults"))
        except ValidationError as exc:
            return bad(str(exc))
        return 200, {"Rules": len(injector.rules.rules)}
    if operation == "GetFaults":
        return 200, {
            **injector.rules.as_dict(),
            "Fired": list(injector.fired),
            "Log": list(injector.log),
            "Held": sorted(injector.holds),
        }
    if operation in ("HoldTransaction", "ReleaseTransaction"):
        token = params.get("ClientRequestToken")
        if not isinstance(token, str) or not token:
            return bad(f"Labkit.{operation} needs a ClientRequestToken")
        if operation == "HoldTransaction":
            injector.holds[token] = Held(token)
        else:
            injector.holds.pop(token, None)
        return 200, {"Held": sorted(injector.holds)}
    seconds = params.get("Seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return bad("Labkit.AdvanceClock needs Seconds, a number >= 0")
    clock = engine.tokens.clock
    shifted = clock if isinstance(clock, _ShiftedClock) else _ShiftedClock(clock, 0.0)
    shifted.offset += float(seconds)
    engine.tokens.clock = shifted
    return 200, {"Advanced": shifted.offset}


def control(url: str, operation: str, payload: Mapping[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """POST one ``Labkit.<operation>`` control request to the embedded endpoint at ``url``."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode("utf-8"),
        method="POST",
        headers={"X-Amz-Target": f"Labkit.{operation}", "Content-Type": "application/x-amz-json-1.0"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310  loopback
            return dict(json.loads(answer.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read() or b"{}")
        raise ValidationError(str(body.get("message") or body)) from None


def _endpoint(conn: Connection) -> str:
    if conn.backend != "embedded" or not conn.endpoint_url:
        raise ConfigurationError(
            f"endpoint faults need labkit's embedded endpoint, and this connection is "
            f"{conn.backend!r}; on DynamoDB Local or AWS use the race lab's per-call faults "
            "(run_interleaving(..., faults=[...])), which act in the client"
        )
    return conn.endpoint_url


def set_endpoint_faults(
    conn: Connection,
    rules: FaultRules | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None,
) -> FaultRules:
    """Switch the endpoint's fault rules (None or [] switches them off); checked here first."""
    parsed = rules if isinstance(rules, FaultRules) else FaultRules.parse(rules or [], "rules")
    control(_endpoint(conn), "SetFaults", parsed.as_dict())
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
    return list(control(_endpoint(conn), "GetFaults", {})["Log"])


def advance_token_clock(conn: Connection, seconds: float) -> float:
    """Move the endpoint's ClientRequestToken clock forward (e.g. past DynamoDB's 10 minutes)."""
    return float(control(_endpoint(conn), "AdvanceClock", {"Seconds": seconds})["Advanced"])
