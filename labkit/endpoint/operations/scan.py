"""Scan: every item of the table or an index (or one segment of a parallel scan), a page at a time.

The store applies the engine's FilterExpression after moto's Limit, as DynamoDB does; the
answer's ``Items`` are projected here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks.request import check_select, check_start_key, index_keys, on_table
from ..errors import invalid
from ..plan import Plan
from ..schema import SchemaOf
from ..store.rewrite import items_projected
from . import Steps, translated


def _check_segments(params: Mapping[str, Any]) -> None:
    """A parallel scan's Segment and TotalSegments come together (checked before the table is looked up)."""
    segment, total = params.get("Segment"), params.get("TotalSegments")
    if segment is None and total is None:
        return
    if total is None:
        raise invalid(
            "The TotalSegments parameter is required but was not present in the request when Segment parameter is "
            "present"
        )
    if segment is None:
        raise invalid(
            "The Segment parameter is required but was not present in the request when parameter TotalSegments is "
            "present"
        )
    if segment >= total:
        raise invalid(
            "The Segment parameter is zero-based and must be less than parameter TotalSegments: "
            f"Segment: {segment} is not less than TotalSegments: {total}"
        )


def _check(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan) -> None:
    _check_segments(params)
    _, schema, _ = on_table(params, schema_of, plan)
    check_select(params)
    index_keys(schema, params)
    check_start_key(schema, params)


STEPS = Steps(check=translated(_check), finish=items_projected)

__all__ = ["STEPS"]
