"""ListTables: the table names in order, after ExclusiveStartTableName, at most Limit — answered
here, not by moto (API reference: ListTables)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore


def page(names: Sequence[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """ListTables: names in order, after ExclusiveStartTableName, at most Limit (100 by default)."""
    ordered = sorted(names)
    start = params.get("ExclusiveStartTableName")
    if start is not None:
        ordered = [n for n in ordered if n > start]
    limit = int(params.get("Limit") or 100)
    page = ordered[:limit]
    answer: dict[str, Any] = {"TableNames": page}
    if len(ordered) > limit:
        answer["LastEvaluatedTableName"] = page[-1]
    return answer


def _answer(store: MotoStore, request: Request) -> Response | None:
    return response(200, page(store.table_names(request.account, request.region), request.params))


STEPS = Steps(answer=_answer)

__all__ = ["STEPS", "page"]
