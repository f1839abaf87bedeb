"""What a read or a write of the settings item returned."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...shared.errors import UnknownFlag

#: Where a read's flags came from.
Source = Literal["item", "cache", "stale", "defaults"]


@dataclass(frozen=True)
class FlagRead:
    """What a read returned: the flags, where they came from, and why."""

    flags: Mapping[str, bool | int | str]
    source: Source
    reason: str = ""
    version: int | None = None
    notes: tuple[str, ...] = ()
    error_code: str = ""
    read_units: float | None = None
    items_read: int = 0
    age: float | None = None

    @property
    def is_default(self) -> bool:
        """True when these are the safe defaults, not the stored item."""
        return self.source == "defaults"

    def __getitem__(self, name: str) -> bool | int | str:
        if name not in self.flags:
            raise UnknownFlag(name, tuple(self.flags))
        return self.flags[name]


@dataclass(frozen=True)
class UpdateResult:
    """A successful safe write: the new version and how many attempts it took."""

    flags: Mapping[str, bool | int | str]
    version: int
    attempts: int
    created: bool = False


@dataclass(frozen=True)
class MigrationResult:
    """Outcome of one migrator: ``won`` is False when another migrator wrote the target first."""

    won: bool
    target_sk: str
    reason: str = ""
    item: Mapping[str, Any] = field(default_factory=dict)


__all__ = ["FlagRead", "MigrationResult", "Source", "UpdateResult"]
