"""Query: the items of one partition (of the table or an index), in sort-key order, a page at a time.

The key condition must pin the partition key with ``=``; a FilterExpression may not name a key
attribute. The store applies the engine's filter after moto's Limit, as DynamoDB does; the
answer's ``Items`` are projected here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...shared.partition_keys import canonical
from ..checks.request import check_select, check_start_key, index_keys, on_table
from ..errors import invalid
from ..expressions import syntax as X
from ..expressions.semantics import attribute_names
from ..plan import Plan
from ..schema import SchemaOf, TableSchema
from ..store.rewrite import items_projected
from . import Steps, translated


def _partition(schema: TableSchema, params: Mapping[str, Any], parsed: dict[str, X.Parsed]) -> str:
    """The partition a Query reads (its canonical key value; "" for a legacy KeyConditions)."""
    keys = index_keys(schema, params)
    condition = parsed.get("KeyConditionExpression")
    if condition is None:
        if params.get("KeyConditions") is None:
            raise invalid(
                "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
            )
        return ""
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    types = dict(keys)
    pk = ""
    for path, placeholder in condition.comparisons:
        name = names.get(path, path)
        value = values[placeholder]
        if name in types and next(iter(value)) != types[name]:
            raise invalid(
                "One or more parameter values were invalid: Condition parameter type does not match schema type"
            )
    for path, placeholder in condition.equalities:
        if names.get(path, path) == keys[0][0]:
            pk = canonical(values[placeholder])
    if not pk:
        if any(names.get(path, path) == keys[0][0] for path, _ in condition.comparisons):
            # DynamoDB's answer when the partition key is there but not compared with `=`
            # (e.g. begins_with(PK, :p)): a Query reads exactly one partition.
            raise invalid("Query key condition not supported")
        raise invalid("Query condition missed key schema element: " + keys[0][0])
    found = parsed.get("FilterExpression")
    if found is not None and found.tree is not None:
        for name, _ in keys:
            if name in attribute_names(found.tree, names):
                raise invalid(
                    f"Filter Expression can only contain non-primary key attributes: Primary key attribute: {name}"
                )
    return pk


def _check(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan) -> None:
    table, schema, parsed = on_table(params, schema_of, plan)
    check_select(params)
    plan.reads.append((table, _partition(schema, params, parsed)))
    check_start_key(schema, params)


STEPS = Steps(check=translated(_check), finish=items_projected)

__all__ = ["STEPS"]
