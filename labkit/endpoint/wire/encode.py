"""DynamoDB's JSON answers: a success payload, or an error in DynamoDB's shape
(a :class:`~labkit.endpoint.errors.ClientFault` becomes one with :func:`fault_response`)."""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from typing import Any

from ...shared.constants import ERROR_PREFIX, JSON_CONTENT_TYPE
from ..errors import ClientFault

Response = tuple[int, dict[str, str], bytes]


#: DynamoDB answers protocol-level mistakes (bad JSON, unknown operation) from its front door.
CORAL_PREFIX = "com.amazon.coral.service#"
_CORAL_CODES = {"SerializationException", "UnknownOperationException", "RequestEntityTooLarge"}

_request_ids = itertools.count(1)


def _json_default(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def headers_for(body: bytes) -> dict[str, str]:
    """The headers botocore reads (and checks: x-amz-crc32)."""
    return {
        "content-type": JSON_CONTENT_TYPE,
        "x-amz-crc32": str(binascii.crc32(body)),
        "x-amzn-requestid": f"labkit-{next(_request_ids):012d}",
    }


def response(status: int, payload: object) -> Response:
    """A DynamoDB JSON response."""
    body = json.dumps(payload, default=_json_default, separators=(",", ":")).encode("utf-8")
    return status, headers_for(body), body


def error_response(code: str, message: str, status: int = 400, **extra: Any) -> Response:
    """DynamoDB's JSON error shape: ``{"__type": "...#Code", "message": ...}``."""
    prefix = CORAL_PREFIX if code in _CORAL_CODES else ERROR_PREFIX
    return response(status, {"__type": prefix + code, "message": message, **extra})


def fault_response(fault: ClientFault) -> Response:
    return error_response(fault.code, fault.message, fault.status, **fault.extra)


__all__ = ["Response", "error_response", "fault_response", "headers_for", "response"]
