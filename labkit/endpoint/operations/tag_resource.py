"""TagResource: tags on a table named by its ARN; a tag with a key the table already has
replaces it ("overwrites the existing tag value") — answered here (API reference: TagResource)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store.arns import resource_table
from ..wire.decode import Request
from ..wire.encode import Response, response
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore


def _answer(store: MotoStore, request: Request) -> Response | None:
    who = (request.account, request.region)
    table = resource_table(request.operation, request.params["ResourceArn"], *who, store.schema_of(*who))
    tags = store.tags(*who, table)
    tags.update({t["Key"]: t["Value"] for t in request.params["Tags"]})
    store.set_tags(*who, table, tags)
    return response(200, {})


STEPS = Steps(answer=_answer)

__all__ = ["STEPS"]
