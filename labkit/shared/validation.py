"""Argument checks: one function per kind of argument, each with one message shape.

Every public labkit function checks its arguments before it sends anything, and says what was
wrong the same way everywhere::

    timeout must be a positive number of seconds, not -1
    budget must be an int >= 1, not 0
    shards must be an int from 1 to 100, not 0; one BatchGetItem reads at most 100 keys
    invariant is str, not a function of one Interleaving
    unknown strategy 'dfs'; choose one of: auto, exhaustive, dpor, pct

Each check raises :class:`~labkit.shared.errors.ValidationError` and returns the value it accepted, so
a caller can check and assign in one line. ``hint`` adds what to do next after a ``;``. A ``bool``
is never accepted as a number (``True`` is an ``int`` to Python, never a count to a user), and a
number must be finite. Like hypothesis's ``internal/validation.py``, this is the one place a
rule such as "an int >= 1" is written; callers never spell it out again.

A floor module: it imports only :mod:`labkit.shared.errors`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

from .errors import ValidationError

T = TypeVar("T")


def _fail(name: str, requirement: str, value: object, hint: str) -> ValidationError:
    """The one message shape: ``<name> must be <requirement>, not <value!r>[; <hint>]``."""
    return ValidationError(f"{name} must be {requirement}, not {value!r}" + (f"; {hint}" if hint else ""))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_int(name: str, value: Any, *, least: int | None = None, most: int | None = None, hint: str = "") -> int:
    """``value`` if it is an int (not a bool) within ``least``..``most`` (each bound optional)."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if least is not None and most is not None:
        requirement = f"an int from {least} to {most}"
    elif least is not None:
        requirement = f"an int >= {least}"
    elif most is not None:
        requirement = f"an int <= {most}"
    else:
        requirement = "an int"
    if not ok or (least is not None and value < least) or (most is not None and value > most):
        raise _fail(name, requirement, value, hint)
    return int(value)


def check_positive(name: str, value: Any, unit: str = "seconds", *, hint: str = "") -> float:
    """``value`` if it is a finite number > 0 (``unit`` names what it counts: seconds, writes, ...)."""
    if not _is_number(value) or value <= 0:
        raise _fail(name, f"a positive number of {unit}" if unit else "a positive number", value, hint)
    return float(value)


def check_non_negative(name: str, value: Any, unit: str = "seconds", *, hint: str = "") -> float:
    """``value`` if it is a finite number >= 0 (0 turns the thing off: no cache, no wait)."""
    if not _is_number(value) or value < 0:
        raise _fail(name, f"a number of {unit} >= 0" if unit else "a number >= 0", value, hint)
    return float(value)


def check_fraction(name: str, value: Any, *, zero: bool = False, hint: str = "") -> float:
    """``value`` if it is a number in (0, 1] — or in [0, 1] with ``zero=True`` (a probability)."""
    if not _is_number(value) or not (0 <= value <= 1) or (value == 0 and not zero):
        raise _fail(name, "a number from 0 to 1" if zero else "a number in (0, 1]", value, hint)
    return float(value)


def check_text(name: str, value: Any, *, hint: str = "") -> str:
    """``value`` if it is a string with something other than spaces in it."""
    if not isinstance(value, str) or not value.strip():
        raise _fail(name, "a non-empty string", value, hint)
    return value


def check_columns(what: str, columns: Iterable[Any], needed: Iterable[str], *, hint: str = "") -> None:
    """ValidationError unless a DataFrame's ``columns`` hold every ``needed`` one (``what`` needs them)."""
    have = list(columns)
    missing = [c for c in needed if c not in have]
    if missing:
        raise ValidationError(
            f"{what} needs the column(s) {', '.join(map(repr, missing))}; the frame has {have}"
            + (f"; {hint}" if hint else "")
        )


def check_callable(name: str, value: T, takes: str, *, optional: bool = False) -> T:
    """``value`` if it can be called (or is None, with ``optional``); ``takes`` says what to pass.

    ``check_callable("invariant", f, "a function of one Interleaving")`` fails with
    ``invariant is str, not a function of one Interleaving``.
    """
    if (value is None and optional) or callable(value):
        return value
    raise ValidationError(f"{name} is {type(value).__name__}, not {takes}" + (", or None" if optional else ""))


def check_choice(name: str, value: T, choices: Iterable[T]) -> T:
    """``value`` if it is one of ``choices``; the message lists them in the given order."""
    options = list(choices)
    if value not in options:
        raise ValidationError(f"unknown {name} {value!r}; choose one of: {', '.join(map(str, options))}")
    return value


__all__ = [
    "check_callable",
    "check_choice",
    "check_columns",
    "check_fraction",
    "check_int",
    "check_non_negative",
    "check_positive",
    "check_text",
]
