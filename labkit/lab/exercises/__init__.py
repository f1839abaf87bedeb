"""Workshop exercises whose answers are checked against every interleaving.

::

    import labkit.lab.exercises
    labkit.lab.exercises.names()                         # ['raise-limit', 'unique-sign-up', 'change-email']
    verdict = labkit.lab.exercises.check("raise-limit", solution)
    print(verdict)                                   # PASSED, or which classic mistake and the order
    labkit.lab.exercises.hint("raise-limit", 1)          # hints come in levels

A check runs the learner's function alone, on bad input, as two concurrent actors under *every*
order of their DynamoDB calls (:func:`labkit.races.all_interleavings`), and in a short storm
(:func:`labkit.races.stress`), checking the table's invariants (:mod:`labkit.lab.invariants`) after
each; each check uses its own table ``labkit-ex-<name>-<random>``, deleted afterwards.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ... import Connection, connect
from ...shared.errors import ValidationError
from ...shared.table import delete_table, ensure_table
from ...shared.validation import check_int, check_positive
from . import change_email, raise_limit, unique_sign_up
from .outcomes import Stop
from .rules import signature_problem
from .trial import Trial
from .verdict import Finding, Verdict

#: Seconds one run of the solution (alone, or one forced order) may take before it is a timeout: the
#: last guard against a real hang (a solution that waits for something that never comes), not the
#: judge of a retry loop — one that spins is stopped by what it does (``SPIN_CALLS`` calls without
#: progress, :mod:`.trial`). A run is one to a few dozen DynamoDB calls on the embedded endpoint,
#: about 2 ms each on an idle machine: under 0.1 s. 30 s leaves a factor of 300 for a machine that is
#: slow or saturated (a load of 9 on 2 cores slows it about 5x), so no sound solution meets it.
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Exercise:
    """One exercise: its name, the signature the checker calls, its documented errors, its hints."""

    name: str
    signature: str
    documented: tuple[type[Exception], ...]
    hints: tuple[str, ...]
    module: ModuleType

    @property
    def errors(self) -> str:
        return ", ".join(e.__name__ for e in self.documented) or "none"


def _exercise(module: ModuleType) -> Exercise:
    return Exercise(module.NAME, module.SIGNATURE, module.DOCUMENTED, module.HINTS, module)


EXERCISES: dict[str, Exercise] = {ex.name: ex for ex in map(_exercise, (raise_limit, unique_sign_up, change_email))}


def names() -> list[str]:
    """The exercises, in the order a workshop takes them."""
    return list(EXERCISES)


def get(name: str) -> Exercise:
    """The exercise called ``name``; a clear error listing the others if there is none."""
    try:
        return EXERCISES[name]
    except (KeyError, TypeError):
        raise ValidationError(f"no exercise called {name!r}; choose one of {', '.join(map(repr, EXERCISES))}") from None


def hint(name: str, level: int = 1) -> str:
    """Hint number ``level`` (1 = gentlest) for an exercise; each level gives a little more away."""
    ex = get(name)
    check_int("level", level, least=1, most=len(ex.hints), hint=f"{name!r} has hints 1 to {len(ex.hints)}")
    more = f" (more: hint({name!r}, {level + 1}))" if level < len(ex.hints) else ""
    return f"hint {level}/{len(ex.hints)}: {ex.hints[level - 1]}{more}"


def check(
    name: str, solution: Callable[..., Any], *, conn: Connection | None = None, timeout: float = DEFAULT_TIMEOUT
) -> Verdict:
    """Check ``solution`` for exercise ``name``; returns a :class:`Verdict` (never raises for it).

    ``conn`` says which DynamoDB to use (default: :func:`labkit.connect`); the check creates
    and deletes its own table there. ``timeout`` bounds each run of the solution, in seconds.
    """
    ex = get(name)
    check_positive("timeout", timeout)
    start = time.perf_counter()
    wrong = signature_problem(solution, ex.signature, ex.module.SAMPLE)
    if wrong is not None:
        return Verdict(name, False, (wrong,))
    base = conn if conn is not None else connect()
    sandbox = Connection(base.backend, base.endpoint_url, base.region, f"labkit-ex-{name}-{secrets.token_hex(4)}")
    ensure_table(sandbox)
    trial = Trial(solution, sandbox, timeout, ex.documented, ex.module.allowed, ex.module.KEYS)
    findings: tuple[Finding, ...] = ()
    try:
        ex.module.script(trial)
    except Stop as stop:
        findings = (stop.finding,)
    finally:
        trial.kill()
        with contextlib.suppress(Exception):  # the table may be gone already; never mask the verdict
            delete_table(sandbox)
    return Verdict(
        name,
        not findings,
        findings,
        tuple(trial.notes) if not findings else (),
        trial.summary(),
        time.perf_counter() - start,
    )


__all__ = ["DEFAULT_TIMEOUT", "EXERCISES", "Exercise", "Finding", "Verdict", "check", "get", "hint", "names"]
