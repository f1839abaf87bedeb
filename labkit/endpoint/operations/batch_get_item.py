"""BatchGetItem: up to 100 keys over several tables; each table's request is a scope of its own
(its legacy parameters translated, its expressions parsed, its answer projected)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...shared import constants as C
from ...shared.catalogue import Op
from ..checks.items import check_key
from ..checks.request import parse_scope, table_schema
from ..errors import invalid
from ..expressions.legacy import translate
from ..plan import ParsedOf, Plan
from ..schema import SchemaOf
from ..store.rewrite import for_moto, projected
from ..wire.decode import Request
from . import Steps


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    requests = request.params["RequestItems"]
    for table_request in requests.values():
        translate(Op.BATCH_GET_ITEM, table_request)
    total = sum(len(r["Keys"]) for r in requests.values())
    if total > C.MAX_BATCH_GET_KEYS:
        raise invalid("Too many items requested for the BatchGetItem call")
    for table, table_request in requests.items():
        parse_scope(table_request, plan)
        schema = table_schema(schema_of, table)
        seen: set[str] = set()
        for key in table_request["Keys"]:
            plan.reads.append((table, check_key(schema, key)))
            plan.gets.append((table, dict(key), bool(table_request.get("ConsistentRead")), False))
            ident = json.dumps(key, sort_keys=True)
            if ident in seen:
                raise invalid("Provided list of item keys contains duplicates")
            seen.add(ident)


def _to_moto(params: Mapping[str, Any], parsed_of: ParsedOf) -> dict[str, Any]:
    requests = {table: for_moto(r, parsed_of(r)) for table, r in params["RequestItems"].items()}
    return {**params, "RequestItems": requests}


def _finish(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    for table, items in (payload.get("Responses") or {}).items():
        scope = params["RequestItems"].get(table, {})
        payload["Responses"][table] = [projected(item, scope, parsed_of) for item in items]


STEPS = Steps(check=_check, to_moto=_to_moto, finish=_finish)

__all__ = ["STEPS"]
