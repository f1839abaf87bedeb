"""TransactGetItems: up to 100 Gets, read together and strongly (twice a strong read's units);
each Get checked as a GetItem, no item read twice, each answer projected with its own
ProjectionExpression."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..checks.items import KeyMismatch
from ..errors import cancelled, invalid
from ..plan import ParsedOf, Plan
from ..schema import SchemaOf
from ..store.rewrite import actions_for_moto, projected
from ..wire.decode import Request
from . import Steps
from .get_item import check_get


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    """Each Get checked as a GetItem; no item twice; a key that does not match its table's schema
    cancels the transaction (reason ``ValidationError``) once every Get has passed its other checks."""
    actions = request.params["TransactItems"]
    seen: set[tuple[str, str]] = set()
    mismatches: dict[int, str] = {}
    for i, action in enumerate(actions):
        try:
            check_get(action["Get"], schema_of, plan, transactional=True)
        except KeyMismatch as mismatch:
            mismatches[i] = mismatch.message
            continue
        table, key, _, _ = plan.gets[-1]
        ident = (table, json.dumps(key, sort_keys=True))
        if ident in seen:
            raise invalid("Transaction request cannot include multiple operations on one item")
        seen.add(ident)
    if mismatches:
        raise cancelled(
            [
                ("ValidationError", mismatches[i], None) if i in mismatches else (None, None, None)
                for i in range(len(actions))
            ]
        )


def _finish(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    for response, action in zip(payload.get("Responses") or [], params["TransactItems"], strict=False):
        if isinstance(response, dict) and "Item" in response:
            response["Item"] = projected(response["Item"], action["Get"], parsed_of)


STEPS = Steps(check=_check, to_moto=actions_for_moto, finish=_finish)

__all__ = ["STEPS"]
