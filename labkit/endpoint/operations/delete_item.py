"""DeleteItem: one item by its key; the store evaluates its ConditionExpression before moto deletes."""

from __future__ import annotations

from ..checks.request import check_keyed_write
from . import Steps, translated

STEPS = Steps(check=translated(check_keyed_write))

__all__ = ["STEPS"]
