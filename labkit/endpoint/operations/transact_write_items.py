"""TransactWriteItems: up to 100 Puts, Updates, Deletes and ConditionChecks, all or none.

Each action is checked as the single-item operation it is a part of (a Put as a PutItem, an
Update as an UpdateItem, ...); a key of the wrong type cancels the transaction (reason
``ValidationError``), as DynamoDB reports it, once the whole request has passed its other checks.
The store checks every condition before it writes and restores what it wrote if a write fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...shared import constants as C
from ...shared.capacity import item_size
from ..checks.items import KeyMismatch
from ..checks.request import check_keyed_write, check_update
from ..errors import cancelled, invalid
from ..plan import Plan
from ..schema import SchemaOf
from ..store.rewrite import actions_for_moto
from ..wire.decode import Request
from . import Steps
from .put_item import check_put


def _check_condition(params: Mapping[str, Any], schema_of: SchemaOf, plan: Plan, transactional: bool = True) -> None:
    check_keyed_write(params, schema_of, plan, transactional, check_only=True)


#: Each kind of action, checked as the operation it is a part of: (action, schemas, plan, transactional).
ACTIONS: Mapping[str, Callable[[Mapping[str, Any], SchemaOf, Plan, bool], None]] = {
    "ConditionCheck": _check_condition,
    "Put": check_put,
    "Delete": check_keyed_write,
    "Update": check_update,
}


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    seen: set[tuple[str, str]] = set()
    size = 0
    mismatches: dict[int, str] = {}
    actions = request.params["TransactItems"]
    for i, action in enumerate(actions):
        present = [k for k, v in action.items() if v is not None and k in ACTIONS]
        if len(present) != 1:
            raise invalid("TransactItems can only contain one of Check, Put, Update or Delete")
        kind = present[0]
        body = action[kind]
        try:
            ACTIONS[kind](body, schema_of, plan, True)
        except KeyMismatch as mismatch:
            mismatches[i] = mismatch.message
            continue
        target = plan.writes[-1]
        ident = (target.table, json.dumps(target.key, sort_keys=True))
        if ident in seen:
            raise invalid("Transaction request cannot include multiple operations on one item")
        seen.add(ident)
        size += item_size(body.get("Item") or body.get("Key") or {})
        size += sum(item_size({k: v}) for k, v in (body.get("ExpressionAttributeValues") or {}).items())
    if size > C.MAX_TRANSACT_REQUEST_BYTES:
        raise invalid("Transaction request cannot be larger than 4 MB")
    if mismatches:
        raise cancelled(
            [
                ("ValidationError", mismatches[i], None) if i in mismatches else (None, None, None)
                for i in range(len(actions))
            ]
        )


STEPS = Steps(check=_check, to_moto=actions_for_moto)

__all__ = ["ACTIONS", "STEPS"]
