"""UpdateItem: one item by its key, changed by an UpdateExpression (or legacy AttributeUpdates)
that may not touch a key attribute; moto applies the expression, the store keeps it atomic."""

from __future__ import annotations

from ..checks.request import check_keyed_write
from . import Steps, translated

STEPS = Steps(check=translated(check_keyed_write))

__all__ = ["STEPS"]
