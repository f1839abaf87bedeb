"""botocore's model of a service (what a real endpoint knows of its operations and their shapes),
loaded once per process: a fresh botocore session per lookup parsed the DynamoDB model again for each
operation, about 0.1 s of CPU each time an endpoint met an operation for the first time.

The model is read with botocore's own loader, the files a session would read (the newest API version
in botocore's data, or in ~/.aws/models, as a session looks), without a session: building one
registers botocore's ~120 client handlers and lists every service's folder (~25 ms an endpoint's first
request waited on; decision 226)."""

from __future__ import annotations

import functools
from typing import Any

#: The model a session reads: ``service-2`` (the service's shapes and operations).
MODEL_TYPE = "service-2"


@functools.cache
def service_model(service: str) -> Any:
    """botocore's ``ServiceModel`` of ``service`` (``"dynamodb"``), one per process."""
    from botocore.loaders import Loader
    from botocore.model import ServiceModel

    loader = Loader()
    api_version = loader.determine_latest_version(service, MODEL_TYPE)
    return ServiceModel(loader.load_data(f"{service}/{api_version}/{MODEL_TYPE}"), service_name=service)
