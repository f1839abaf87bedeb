"""TransactGetItems: up to 100 Gets, read together and strongly (twice a strong read's units);
each Get checked as a GetItem, each answer projected with its own ProjectionExpression."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..plan import ParsedOf, Plan
from ..schema import SchemaOf
from ..store.rewrite import actions_for_moto, projected
from ..wire.decode import Request
from . import Steps
from .get_item import check_get


def _check(request: Request, schema_of: SchemaOf, plan: Plan) -> None:
    for action in request.params["TransactItems"]:
        check_get(action["Get"], schema_of, plan, transactional=True)


def _finish(params: Mapping[str, Any], payload: dict[str, Any], parsed_of: ParsedOf) -> None:
    for response, action in zip(payload.get("Responses") or [], params["TransactItems"], strict=False):
        if isinstance(response, dict) and "Item" in response:
            response["Item"] = projected(response["Item"], action["Get"], parsed_of)


STEPS = Steps(check=_check, to_moto=actions_for_moto, finish=_finish)

__all__ = ["STEPS"]
