"""GetItem: one item by its full primary key; its ProjectionExpression applied to the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks.items import check_key
from ..checks.request import on_table
from ..plan import ParsedOf, Plan
from ..schema import SchemaOf
from ..store.rewrite import projected
from . import Steps, translated


def check_get(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan, transactional: bool = False) -> None:
    """One Get — a GetItem, or a Get of a TransactGetItems (``transactional``: read strongly, twice the units)."""
    table, schema, _ = on_table(params, schema_of, plan)
    plan.reads.append((table, check_key(schema, params["Key"])))
    strong = transactional or bool(params.get("ConsistentRead"))
    plan.gets.append((table, dict(params["Key"]), strong, transactional))


def _finish(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    if "Item" in payload:
        payload["Item"] = projected(payload["Item"], params, parsed_of)


STEPS = Steps(check=translated(check_get), finish=_finish)

__all__ = ["STEPS", "check_get"]
