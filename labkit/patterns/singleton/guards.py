"""The two guards of a settings write: the version guard's verdict on a lost answer, and the size guard.

A write whose answer never came back is resolved by re-reading the item. Only one write per
``version`` can pass the guard, so: the old version means "not applied, try again"; the next
version holding exactly this write's item means "applied"; another writer's item at that version
means "not applied"; a version further on means labkit cannot tell (OutcomeUnknown).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...shared.capacity import read_units
from ...shared.codec import from_wire
from ...shared.constants import MAX_ITEM_BYTES, READ_UNIT_BYTES
from ...shared.errors import ItemSizeWarning, ItemTooLarge, LabkitError, OutcomeUnknown
from .schema import version_of


@dataclass(frozen=True)
class SentWrite:
    """A write whose answer was lost: the version it was guarded on and the item it would make."""

    base: int | None
    expected: Mapping[str, Any]

    def verdict(self, current: Mapping[str, Any] | None) -> str:
        """Whether the write was applied: "ours", "retry" (it was not) or "unknown" (cannot tell)."""
        now = version_of(from_wire(current)) if current is not None else None
        mine = (self.base or 0) + 1
        if current is None:
            return "retry" if self.base is None else "unknown"
        if now == self.base:
            return "retry"
        if now == mine:
            return "ours" if from_wire(current) == from_wire(self.expected) else "retry"
        return "unknown"


class LostAnswer(Exception):
    """A write's answer was lost: :class:`~labkit.patterns.singleton.FlagStore` catches it and re-reads.

    Never leaves the store; carries what the write would have made (``sent``) and the labkit
    error to raise if the re-read cannot tell (``error``).
    """

    def __init__(self, sent: SentWrite, error: OutcomeUnknown) -> None:
        super().__init__(str(error))
        self.sent = sent
        self.error = error


def root_cause(error: LabkitError | None) -> BaseException | None:
    """The botocore error behind a labkit error (what ``__cause__`` should show), else the error."""
    return error.__cause__ if error is not None and error.__cause__ is not None else error


def check_size(old_size: int, new_size: int) -> None:
    """ItemTooLarge above 400 KB; an ItemSizeWarning when the read cost would grow."""
    if new_size > MAX_ITEM_BYTES:
        raise ItemTooLarge(new_size, MAX_ITEM_BYTES)
    if read_units(new_size, consistent=True) > read_units(max(old_size, 1), consistent=True):
        warnings.warn(
            ItemSizeWarning(
                f"the settings item grows to {new_size:,} bytes, past a {READ_UNIT_BYTES:,}-byte "
                f"read unit: every read of it now costs "
                f"{read_units(new_size, consistent=True):g} units strongly consistent instead of "
                f"{read_units(max(old_size, 1), consistent=True):g}. Keep the singleton small.",
                new_size,
            ),
            stacklevel=4,
        )


__all__ = ["LostAnswer", "SentWrite", "check_size", "root_cause"]
