"""botocore's model of a service (what a real endpoint knows of its operations and their shapes),
loaded once per process: a fresh botocore session per lookup parsed the DynamoDB model again for each
operation, about 0.1 s of CPU each time an endpoint met an operation for the first time."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def service_model(service: str) -> Any:
    """botocore's ``ServiceModel`` of ``service`` (``"dynamodb"``), one per process."""
    import botocore.session

    return botocore.session.get_session().get_service_model(service)
