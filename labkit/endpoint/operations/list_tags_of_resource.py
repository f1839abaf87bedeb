"""ListTagsOfResource: the ARN must name an existing table of this account and region (else
DynamoDB's refusal: an invalid ARN, another account, "Requested resource not found: ResourcArn:
... not found"); moto lists the tags (API reference: ListTagsOfResource)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store.arns import resource_table
from ..wire.decode import Request
from . import Steps

if TYPE_CHECKING:
    from ..store.moto_store import MotoStore
    from ..wire.encode import Response


def existing_resource(store: MotoStore, request: Request) -> Response | None:
    """The request's ResourceArn names an existing table (DynamoDB's refusal otherwise); moto answers."""
    who = (request.account, request.region)
    resource_table(request.operation, request.params["ResourceArn"], *who, store.schema_of(*who))
    return None


STEPS = Steps(answer=existing_resource)

__all__ = ["STEPS", "existing_resource"]
