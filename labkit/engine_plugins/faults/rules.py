"""Endpoint faults by rule: :class:`FaultRule`, :class:`FaultRules` (from JSON, :func:`load_rules`).

Client side: a notebook checks rules here before sending them
(:func:`labkit.engine_plugins.faults.set_endpoint_faults`); the endpoint's
:class:`~labkit.engine_plugins.faults.injector.FaultInjector` applies them. Imports the floor only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...shared.catalogue import (
    WEAK_ANSWER_OPERATIONS,
    WEAK_ANSWER_WHERE,
    FormError,
    WeakAnswer,
    WeakForm,
    parse_weak_answer,
    weak_answer_misuse,
)
from ...shared.engine_hooks import RequestInfo
from ...shared.errors import ConfigurationError, ValidationError
from ...shared.validation import check_fraction, check_int, check_text
from .answers import CONFLICTABLE, ERRORS, OPERATIONS, did_you_mean

#: What a rule may give: one of DynamoDB's errors, or one of its weak answers (a 200 that
#: holds less than a strong, whole, full one: :class:`labkit.shared.catalogue.WeakAnswer`).
KINDS: tuple[str, ...] = (*ERRORS, *(kind.value for kind in WeakAnswer))

_RULE_FIELDS = ("operation", "table", "key", "error", "probability", "count", "apply_first", "item")


def _form(error: str) -> WeakForm | None:
    """The weak answer's form an ``error`` names (``"stale-read; behind=2"``), or None."""
    try:
        return parse_weak_answer(error)
    except FormError:
        return None


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
        if self.weak is None and self.error not in KINDS:
            raise ValidationError(
                f"{where}: unknown error {self.error!r}"
                f"{did_you_mean(self.error, list(KINDS))}; use one of "
                f"{', '.join(KINDS)}"
            )
        if self.weak is not None:
            if _form(self.error) is None:
                said = str(weak_answer_misuse(self.error, "", {})).partition(": ")[2]
                raise ValidationError(f"{where}: {said.partition('; ' + WEAK_ANSWER_WHERE)[0]}")
            if self.operation != "*" and self.operation not in WEAK_ANSWER_OPERATIONS[self.weak]:
                why = weak_answer_misuse(self.error, self.operation, {})
                raise ValidationError(f"{where}: {str(why).partition(': ')[2]}")
            if self.apply_first:
                raise ValidationError(f"{where}: apply_first is for errors; {self.error} is an answer, not an error")
        if self.error == "TransactionConflict" and self.operation not in ("*", *CONFLICTABLE):
            raise ValidationError(
                f"{where}: DynamoDB never answers {self.operation} with a "
                f"transaction conflict; use it on {', '.join(CONFLICTABLE)}"
            )
        check_fraction(f"{where}: probability", self.probability, zero=True)
        if self.count is not None:
            check_int(f"{where}: count", self.count, least=1, hint="or leave it out: no limit")
        if not isinstance(self.apply_first, bool):
            raise ValidationError(f"{where}: apply_first must be true or false")
        for name in ("table", "key"):
            if getattr(self, name) is not None:
                check_text(f"{where}: {name}", getattr(self, name))

    @property
    def weak(self) -> WeakAnswer | None:
        """The weak answer this rule gives (None: it gives an error)."""
        kind = self.error.partition(";")[0].strip()
        return WeakAnswer(kind) if kind in WeakAnswer.__members__.values() else None

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
        if self.weak is not None and weak_answer_misuse(self.error, request.operation, request.params) is not None:
            return False  # "*", or a consistent read: only where DynamoDB can give it
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
        seed = check_int(f"{source}: seed", data.get("seed", 0))
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
            f"faults file {source} is not valid JSON ({exc}); see `labkit.engine_plugins.faults` for the format"
        ) from exc
    return FaultRules.parse(data, f"faults file {source}")
