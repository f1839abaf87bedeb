"""UntagResource: checked as ListTagsOfResource is (the ARN names an existing table); moto removes the tags."""

from __future__ import annotations

from . import Steps
from .list_tags_of_resource import existing_resource

STEPS = Steps(answer=existing_resource)

__all__ = ["STEPS"]
