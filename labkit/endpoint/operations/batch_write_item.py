"""BatchWriteItem: up to 25 PutRequests and DeleteRequests over several tables, no two on one item."""

from __future__ import annotations

import json

from ...shared import constants as C
from ..checks.items import check_item, check_key
from ..checks.request import table_schema
from ..errors import invalid
from ..plan import Plan, Target
from ..schema import SchemaOf
from ..wire.decode import Request
from . import Steps


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    requests = request.params["RequestItems"]
    total = sum(len(r) for r in requests.values())
    if total > C.MAX_BATCH_WRITE_ITEMS:
        raise invalid(
            "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value "
            f"must satisfy constraint: [Member must have length less than or equal to "
            f"{C.MAX_BATCH_WRITE_ITEMS}, Member must have length greater than or equal to 1]"
        )
    for table, table_requests in requests.items():
        schema = table_schema(schema_of, table)
        seen: set[str] = set()
        for entry in table_requests:
            present = [k for k in ("PutRequest", "DeleteRequest") if entry.get(k) is not None]
            if len(present) != 1:
                raise invalid(
                    "Supplied AttributeValue has more than one datatypes set, must contain exactly one of "
                    "the supported datatypes"
                    if present
                    else "A WriteRequest must contain exactly one of PutRequest or DeleteRequest"
                )
            if present[0] == "PutRequest":
                key, pk = check_item(schema, entry["PutRequest"]["Item"])
            else:
                key = entry["DeleteRequest"]["Key"]
                pk = check_key(schema, key)
            ident = json.dumps(key, sort_keys=True)
            if ident in seen:
                raise invalid("Provided list of item keys contains duplicates")
            seen.add(ident)
            plan.writes.append(Target(table, dict(key), pk))


STEPS = Steps(check=_check)

__all__ = ["STEPS"]
