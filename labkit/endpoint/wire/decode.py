"""Turn HTTP headers and a body into a :class:`Request`, or refuse it as DynamoDB does.

* the operation comes from ``X-Amz-Target`` (``DynamoDB_20120810.GetItem`` or
  ``DynamoDBStreams_20120810.GetRecords``); anything else is ``UnknownOperationException``;
* the body must be UTF-8 JSON holding one object; anything else is ``SerializationException``;
* account and region come from the SigV4 credential scope, as moto derives them.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ClientFault
from ..model import service_model

DYNAMODB = "dynamodb"
STREAMS = "dynamodbstreams"
_PREFIXES = {"DynamoDB_20120810": DYNAMODB, "DynamoDBStreams_20120810": STREAMS}
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/")
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class Request:
    """One decoded request."""

    service: str  # DYNAMODB or STREAMS
    operation: str
    params: dict[str, Any]
    account: str
    region: str
    headers: Mapping[str, str]
    body: bytes


@functools.cache
def operations(service: str) -> frozenset[str]:
    """Operation names of ``service`` in botocore's model (what a real endpoint knows)."""
    return frozenset(service_model(service).operation_names)


def _operation(headers: Mapping[str, str]) -> tuple[str, str]:
    target = headers.get("x-amz-target", "")
    prefix, _, name = target.partition(".")
    service = _PREFIXES.get(prefix)
    if service is None or name not in operations(service):
        raise ClientFault("UnknownOperationException", f"unknown operation {target!r}")
    return service, name


def _params(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ClientFault("SerializationException", f"the request body is not valid UTF-8 ({exc.reason})") from exc
    try:
        params = json.loads(text)
    except RecursionError as exc:
        raise ClientFault("SerializationException", "the request body is nested too deeply") from exc
    except ValueError as exc:
        raise ClientFault("SerializationException", f"the request body is not valid JSON ({exc})") from exc
    if not isinstance(params, dict):
        raise ClientFault(
            "SerializationException",
            f"the request body must be a JSON object, not {type(params).__name__}",
        )
    return params


def decode(headers: Mapping[str, str], body: bytes, account_of: Callable[[str | None], str]) -> Request:
    """A :class:`Request` from lower-case ``headers`` and ``body``; raises :class:`ClientFault`."""
    service, operation = _operation(headers)
    params = _params(body)
    match = _CREDENTIAL.search(headers.get("authorization", ""))
    access_key, region = match.groups() if match else (None, DEFAULT_REGION)
    account = os.environ.get("MOTO_ACCOUNT_ID") or headers.get("x-moto-account-id") or account_of(access_key)
    return Request(service, operation, params, account, region, headers, body)


__all__ = ["DYNAMODB", "STREAMS", "Request", "decode", "operations"]
