"""The settings item's declared flags: names, types and fail-closed defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...shared.errors import FlagTypeError, UnknownFlag, ValidationError

#: The attribute that counts changes to the item (optimistic-locking token).
VERSION_ATTR = "version"
#: Attributes a flag may not be called: the key and the version counter.
RESERVED_NAMES = frozenset({"PK", "SK", VERSION_ATTR})
FlagType = type[bool] | type[int] | type[str]


@dataclass(frozen=True)
class Flag:
    """One declared setting: its name, its type (bool, int or str) and its fail-closed value."""

    name: str
    type: FlagType
    safe_default: bool | int | str

    def __post_init__(self) -> None:
        if self.type not in (bool, int, str):
            raise ValidationError(f"flag {self.name!r}: type must be bool, int or str, not {self.type!r}")
        if self.name in RESERVED_NAMES or not self.name:
            raise ValidationError(f"flag name {self.name!r} is reserved; choose another name")
        if not _is_type(self.safe_default, self.type):
            raise FlagTypeError(f"flag {self.name!r}: safe_default {self.safe_default!r} is not {a_type(self.type)}")

    def check(self, value: object) -> bool | int | str:
        """Return ``value`` if it has this flag's type; else raise :class:`FlagTypeError`."""
        if not _is_type(value, self.type):
            raise FlagTypeError(
                f"flag {self.name!r} takes {a_type(self.type)}, got {type(value).__name__} "
                f"{value!r}; nothing was written. Pass e.g. {self.name}={self.safe_default!r}."
            )
        return value  # type: ignore[return-value]


def a_type(kind: type) -> str:
    """A flag type with its article, for messages: ``a bool``, ``an int``, ``a str``."""
    name = kind.__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _is_type(value: object, kind: FlagType) -> bool:
    """Exact type check: bool is a subclass of int in Python, but not a valid int flag."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, str)


@dataclass(frozen=True)
class FlagSchema:
    """The declared flags of one settings item, in order."""

    flags: tuple[Flag, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.flags]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationError(f"flags declared twice: {', '.join(dupes)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flags)

    def __getitem__(self, name: str) -> Flag:
        for f in self.flags:
            if f.name == name:
                return f
        raise UnknownFlag(name, self.names)

    def defaults(self) -> dict[str, bool | int | str]:
        """The safe value of every flag: features off, maintenance on."""
        return {f.name: f.safe_default for f in self.flags}

    def validate(self, changes: Mapping[str, object]) -> dict[str, bool | int | str]:
        """Check names and types of ``changes``; raise before anything is sent."""
        if not changes:
            raise ValidationError("no flags to change; pass at least one, e.g. signup_enabled=True")
        return {name: self[name].check(value) for name, value in changes.items()}

    def decode(self, stored: Mapping[str, Any]) -> tuple[dict[str, bool | int | str], list[str]]:
        """Flags from a stored item (plain Python values), with notes on what was ignored."""
        flags = self.defaults()
        notes: list[str] = []
        for name, value in stored.items():
            if name in RESERVED_NAMES:
                continue
            if name not in flags:
                notes.append(f"ignored unknown attribute {name!r}")
                continue
            flag = self[name]
            if flag.type is int and isinstance(value, Decimal) and value == value.to_integral_value():
                value = int(value)
            if _is_type(value, flag.type):
                flags[name] = value
            else:
                notes.append(
                    f"{name!r} holds {value!r}, not {a_type(flag.type)}; using its safe default {flag.safe_default!r}"
                )
        return flags, notes


#: The lesson's flags. Safe defaults fail closed: new features off, maintenance on.
DEFAULT_SCHEMA = FlagSchema(
    (
        Flag("signup_enabled", bool, False),
        Flag("maintenance_mode", bool, True),
        Flag("ai_search_enabled", bool, False),
        Flag("rate_limit_per_minute", int, 60),
        Flag("banner_message", str, ""),
    )
)


def version_of(stored: Mapping[str, Any]) -> int | None:
    """The ``version`` attribute of a stored item (plain values) as an int, or None."""
    v = stored.get(VERSION_ATTR)
    return int(v) if isinstance(v, Decimal | int) and not isinstance(v, bool) else None


__all__ = ["DEFAULT_SCHEMA", "RESERVED_NAMES", "VERSION_ATTR", "Flag", "FlagSchema", "FlagType", "a_type", "version_of"]
