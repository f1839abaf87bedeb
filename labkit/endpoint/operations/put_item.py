"""PutItem: a whole item, checked against the table's keys and indexes before moto stores it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks.items import check_item
from ..checks.request import on_table
from ..plan import Plan, Target
from ..schema import SchemaOf
from . import Steps, translated


def check_put(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan, transactional: bool = False) -> None:
    """One Put — a PutItem, or a Put of a TransactWriteItems (``transactional``)."""
    table, schema, _ = on_table(params, schema_of, plan)
    key, pk = check_item(schema, params["Item"])
    plan.writes.append(Target(table, key, pk, transactional))


STEPS = Steps(check=translated(check_put))

__all__ = ["STEPS", "check_put"]
