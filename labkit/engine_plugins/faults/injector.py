"""The endpoint side of faults: the :class:`FaultInjector` engine hook and the ``Labkit.*``
control operations that switch it (``SetFaults``, ``GetFaults``, ``HoldTransaction``,
``ReleaseTransaction``).

An engine plug-in: :mod:`labkit.embedded` builds one injector per engine, adds it as a hook and
registers :func:`fault_controls` for it. Imports the floor and the client side of faults, never
the engine (it talks to it through :mod:`labkit.shared.engine_hooks`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...shared import constants as C
from ...shared.catalogue import TRANSACTIONS, Op
from ...shared.engine_hooks import Rejection, RequestInfo
from ...shared.errors import ValidationError
from ...shared.partition_keys import canonical
from .answers import CONFLICT_EXCEPTION_MESSAGE, CONFLICTABLE, HELD, cancelled, conflict_reasons, rejection
from .rules import FaultRule, FaultRules

if TYPE_CHECKING:
    from ...endpoint.engine import Control, DynamoEngine


@dataclass
class Held:
    token: str
    locks: frozenset[tuple[str, str]] = frozenset()
    prepared: bool = False


class FaultInjector:
    """The engine hook: rejects requests by rule, and holds transactions in flight.

    Called under the engine's lock. ``log`` records every injected fault (newest last).
    """

    LOG_SIZE = 1000

    def __init__(self, rules: FaultRules | None = None) -> None:
        self.rules = rules or FaultRules()
        self.fired: list[int] = [0] * len(self.rules.rules)
        self.rng = random.Random(self.rules.seed)
        self.holds: dict[str, Held] = {}
        self.log: list[dict[str, Any]] = []

    def set_rules(self, rules: FaultRules) -> None:
        """Replace the rules; the seed and counts start over."""
        self.rules = rules
        self.fired = [0] * len(rules.rules)
        self.rng = random.Random(rules.seed)

    def _record(self, request: RequestInfo, rej: Rejection, why: str, now: float) -> Rejection:
        self.log.append(
            {
                "now": now,
                "operation": request.operation,
                "error": rej.code,
                "status": rej.status,
                "applied": rej.apply_first,
                "why": why,
                "keys": [list(k) for k in request.writes + request.reads],
            }
        )
        del self.log[: -self.LOG_SIZE]
        return rej

    def wants(self, request: RequestInfo) -> bool:
        """Only while it has rules or holds: an idle injector leaves requests on the fast path."""
        return bool(self.rules.rules or self.holds)

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        held = self._in_flight(request, now)
        if held is not None:
            return held
        fired = self._fire(request, weak=False)
        if fired is None:
            return None
        i, rule = fired
        rej = rejection(rule.error, request.operation, request.params, item=rule.item, apply_first=rule.apply_first)
        return self._record(request, rej, f"rule {i}", now)

    def weak_answer(self, request: RequestInfo, now: float) -> str | None:
        """The weak answer a rule gives this request (``stale-read``, ...), or None. The engine asks
        before :meth:`before`, for a request that did not ask for one itself (:mod:`labkit.shared.engine_hooks`)."""
        fired = self._fire(request, weak=True)
        if fired is None:
            return None
        i, rule = fired
        self._record(request, Rejection(rule.error, "a weak answer, by rule", 200), f"rule {i}", now)
        return rule.error

    def _fire(self, request: RequestInfo, weak: bool) -> tuple[int, FaultRule] | None:
        """The first rule (giving errors, or weak answers) that matches and fires; counted."""
        for i, rule in enumerate(self.rules.rules):
            if (rule.weak is not None) != weak:
                continue
            if rule.count is not None and self.fired[i] >= rule.count:
                continue
            if not rule.matches(request):
                continue
            if rule.probability < 1 and self.rng.random() >= rule.probability:
                continue
            self.fired[i] += 1
            return i, rule
        return None

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        """Nothing to meter: faults act before a request applies."""

    # --- transactions in flight

    def _in_flight(self, request: RequestInfo, now: float) -> Rejection | None:
        token = request.params.get("ClientRequestToken") if request.operation == Op.TRANSACT_WRITE_ITEMS else None
        mine = self.holds.get(str(token)) if token else None
        if mine is not None and not mine.prepared:  # the prepare: lock its items, write nothing
            mine.locks = frozenset(request.writes + request.reads)
            mine.prepared = True
            return Rejection(HELD, f"transaction {token} is held in flight by labkit's race lab", 409)
        if mine is not None:  # the commit: release and apply
            del self.holds[mine.token]
            return None
        locked = frozenset().union(*(h.locks for h in self.holds.values())) if self.holds else frozenset()
        if not locked or request.operation not in CONFLICTABLE:
            return None
        touched = set(request.writes)
        if request.operation in TRANSACTIONS:
            touched |= set(request.reads)
        hit = touched & locked
        if not hit:
            return None
        if request.operation in TRANSACTIONS:
            actions = request.params.get("TransactItems") or []
            at = [i for i, a in enumerate(actions) if _action_touches(a, hit)] or [0]
            rej = cancelled(conflict_reasons(len(actions), at))
        else:
            rej = Rejection("TransactionConflictException", CONFLICT_EXCEPTION_MESSAGE, 400)
        return self._record(request, rej, "transaction in flight", now)


def _action_touches(action: Mapping[str, Any], keys: set[tuple[str, str]]) -> bool:
    """Does this TransactItems action name one of ``keys``? (its Key's or Item's values)."""
    for body in action.values():
        if not isinstance(body, Mapping):
            continue
        attrs = body.get("Key") or body.get("Item") or {}
        table = body.get("TableName")
        if any((table, canonical(v)) in keys for v in attrs.values()):
            return True
    return False


def fault_controls(injector: FaultInjector) -> dict[str, Control]:
    """The ``Labkit.*`` control operations that switch ``injector``, by ``X-Amz-Target``."""

    def bad(message: str) -> tuple[int, dict[str, Any]]:
        return 400, {"__type": C.ERROR_PREFIX + "ValidationException", "message": message}

    def set_faults(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            injector.set_rules(FaultRules.parse(params, Op.SET_FAULTS))
        except ValidationError as exc:
            return bad(str(exc))
        return 200, {"Rules": len(injector.rules.rules)}

    def get_faults(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, {
            **injector.rules.as_dict(),
            "Fired": list(injector.fired),
            "Log": list(injector.log),
            "Held": sorted(injector.holds),
        }

    def holding(operation: str) -> Control:
        def hold_or_release(engine: DynamoEngine, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            token = params.get("ClientRequestToken")
            if not isinstance(token, str) or not token:
                return bad(f"{operation} needs a ClientRequestToken")
            if operation == Op.HOLD_TRANSACTION:
                injector.holds[token] = Held(token)
            else:
                injector.holds.pop(token, None)
            return 200, {"Held": sorted(injector.holds)}

        return hold_or_release

    return {
        Op.SET_FAULTS: set_faults,
        Op.GET_FAULTS: get_faults,
        Op.HOLD_TRANSACTION: holding(Op.HOLD_TRANSACTION),
        Op.RELEASE_TRANSACTION: holding(Op.RELEASE_TRANSACTION),
    }


__all__ = ["FaultInjector", "Held", "fault_controls"]
