"""Endpoint faults by rule: :class:`FaultRules` (from JSON, :func:`load_rules`) and the
:class:`FaultInjector` engine hook, which also holds transactions in flight for the race lab.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..endpoint.hooks import Rejection, RequestInfo
from ..errors import ConfigurationError, ValidationError
from ..partition_keys import canonical
from .shapes import (
    CONFLICT_EXCEPTION_MESSAGE,
    CONFLICTABLE,
    ERRORS,
    HELD,
    OPERATIONS,
    cancelled,
    conflict_reasons,
    did_you_mean,
    rejection,
)

_RULE_FIELDS = ("operation", "table", "key", "error", "probability", "count", "apply_first", "item")


@dataclass(frozen=True)
class FaultRule:
    """One endpoint rule: which requests (operation, table, partition key) get which error."""

    operation: str
    error: str
    table: str | None = None
    key: str | None = None
    probability: float = 1.0
    count: int | None = None
    apply_first: bool = False
    item: int = 0

    def __post_init__(self) -> None:
        where = f"fault rule {self.as_dict()}"
        if self.operation != "*" and self.operation not in OPERATIONS:
            raise ValidationError(
                f"{where}: unknown operation {self.operation!r}"
                f"{did_you_mean(self.operation, OPERATIONS)}; use '*' or one of "
                f"{', '.join(OPERATIONS)}"
            )
        if self.error not in ERRORS:
            raise ValidationError(
                f"{where}: unknown error {self.error!r}"
                f"{did_you_mean(self.error, list(ERRORS))}; use one of "
                f"{', '.join(ERRORS)}"
            )
        if self.error == "TransactionConflict" and self.operation not in ("*", *CONFLICTABLE):
            raise ValidationError(
                f"{where}: DynamoDB never answers {self.operation} with a "
                f"transaction conflict; use it on {', '.join(CONFLICTABLE)}"
            )
        p = self.probability
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise ValidationError(f"{where}: probability {p!r} must be a number from 0 to 1")
        if self.count is not None and (
            isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1
        ):
            raise ValidationError(f"{where}: count {self.count!r} must be an int >= 1 (or omitted: no limit)")
        if not isinstance(self.apply_first, bool):
            raise ValidationError(f"{where}: apply_first must be true or false")
        for name in ("table", "key"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValidationError(f"{where}: {name} must be a non-empty string")

    def as_dict(self) -> dict[str, Any]:
        """The rule as in a faults file (defaults left out)."""
        out: dict[str, Any] = {"operation": self.operation, "error": self.error}
        for name, default in (
            ("table", None),
            ("key", None),
            ("probability", 1.0),
            ("count", None),
            ("apply_first", False),
            ("item", 0),
        ):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out

    def matches(self, request: RequestInfo) -> bool:
        if self.operation not in ("*", request.operation):
            return False
        if self.error == "TransactionConflict" and request.operation not in CONFLICTABLE:
            return False
        touched = request.writes + request.reads
        if self.table is not None and all(t != self.table for t, _ in touched):
            return False
        return self.key is None or any(k == self.key and (self.table is None or t == self.table) for t, k in touched)


@dataclass(frozen=True)
class FaultRules:
    """A seeded set of rules; the first matching rule that fires wins."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0

    @classmethod
    def parse(cls, data: Any, source: str = "faults") -> FaultRules:
        """From the JSON shape (``{"seed": 7, "rules": [...]}`` or a bare list of rules)."""
        if isinstance(data, list):
            data = {"rules": data}
        if not isinstance(data, Mapping):
            raise ValidationError(
                f'{source}: expected an object {{"seed": 7, "rules": [...]}} '
                f"or a list of rules, not {type(data).__name__}"
            )
        unknown = sorted(set(data) - {"seed", "rules"})
        if unknown:
            raise ValidationError(f"{source}: unknown field(s) {', '.join(unknown)}; use 'seed' and 'rules'")
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValidationError(f"{source}: seed {seed!r} must be an int")
        raw = data.get("rules", [])
        if not isinstance(raw, list):
            raise ValidationError(f"{source}: 'rules' must be a list")
        rules = []
        for i, entry in enumerate(raw):
            if not isinstance(entry, Mapping):
                raise ValidationError(f"{source}: rule {i} must be an object")
            bad = sorted(set(entry) - set(_RULE_FIELDS))
            if bad:
                raise ValidationError(
                    f"{source}: rule {i} has unknown field(s) {', '.join(bad)}; fields are {', '.join(_RULE_FIELDS)}"
                )
            missing = [f for f in ("operation", "error") if f not in entry]
            if missing:
                raise ValidationError(f"{source}: rule {i} needs {' and '.join(missing)}")
            try:
                rules.append(FaultRule(**dict(entry)))
            except ValidationError as exc:
                raise ValidationError(f"{source}: rule {i}: {exc}") from None
        return cls(tuple(rules), seed)

    def as_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "rules": [r.as_dict() for r in self.rules]}


def load_rules(path: str | Path) -> FaultRules:
    """Read and check a faults file (JSON, see the module docstring); errors name the file."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read faults file {source}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(
            f"faults file {source} is not valid JSON ({exc}); see `labkit.faults` for the format"
        ) from exc
    return FaultRules.parse(data, f"faults file {source}")


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

    def before(self, request: RequestInfo, now: float) -> Rejection | None:
        held = self._in_flight(request, now)
        if held is not None:
            return held
        for i, rule in enumerate(self.rules.rules):
            if rule.count is not None and self.fired[i] >= rule.count:
                continue
            if not rule.matches(request):
                continue
            if rule.probability < 1 and self.rng.random() >= rule.probability:
                continue
            self.fired[i] += 1
            rej = rejection(rule.error, request.operation, request.params, item=rule.item, apply_first=rule.apply_first)
            return self._record(request, rej, f"rule {i}", now)
        return None

    def after(self, request: RequestInfo, consumed: Mapping[tuple[str, str], tuple[float, float]], now: float) -> None:
        """Nothing to meter: faults act before a request applies."""

    # --- transactions in flight

    def _in_flight(self, request: RequestInfo, now: float) -> Rejection | None:
        token = request.params.get("ClientRequestToken") if request.operation == "TransactWriteItems" else None
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
        if request.operation in ("TransactWriteItems", "TransactGetItems"):
            touched |= set(request.reads)
        hit = touched & locked
        if not hit:
            return None
        if request.operation in ("TransactWriteItems", "TransactGetItems"):
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
