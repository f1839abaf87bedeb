"""moto's DynamoDB, driven directly: a fast dispatch, atomic writes, and item lookups.

Private to :mod:`labkit.endpoint`, which calls everything here under its lock.

* :meth:`MotoCore.dispatch` runs the hot operations by calling moto's own
  ``DynamoHandler`` action methods on a JSON-decoded body and serialising the
  result with ``json.dumps`` -- skipping werkzeug's Request, botocore's
  request parser and moto's generic response serializer, which cost most of
  moto's ~1.4 ms per request. Everything else (and any body carrying binary
  values, which moto's parser decodes) goes through moto's full dispatch.
* Both paths use the same :class:`_Backend` wrapper around moto's backend. It
  makes TransactWriteItems check every condition before writing anything and
  undo the touched items if a write fails, makes a failed UpdateItem leave its
  item untouched, and records the items Query and Scan read before filtering
  (for consumed capacity).
"""

from __future__ import annotations

import base64
import binascii
import copy
import itertools
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from moto.core.exceptions import ServiceException
from moto.core.request import Request
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    MultipleTransactionsException,
    ResourceNotFoundException,
    TooManyTransactionsException,
    TransactionCanceledException,
    TransactWriteSingleOpException,
)
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.utilities import dynamo_to_dict
from moto.dynamodb.responses import DynamoHandler
from moto.iam.models import get_account_id_from
from werkzeug.exceptions import HTTPException

WireItem = dict[str, Any]
Response = tuple[int, dict[str, str], bytes]
Finish = Callable[[dict[str, Any]], dict[str, Any]]

ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"

#: Operations answered by calling moto's action methods directly.
FAST_OPERATIONS: dict[str, str] = {
    "GetItem": "get_item",
    "PutItem": "put_item",
    "UpdateItem": "update_item",
    "DeleteItem": "delete_item",
    "Query": "query",
    "Scan": "scan",
    "TransactWriteItems": "transact_write_items",
    "TransactGetItems": "transact_get_items",
    "BatchGetItem": "batch_get_item",
    "BatchWriteItem": "batch_write_item",
}

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/")
_BINARY = re.compile(rb'"BS?"\s*:')
_request_ids = itertools.count(1)


def _json_default(value: object) -> object:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def response(status: int, payload: object) -> Response:
    """A DynamoDB JSON response with the headers botocore reads (and checks: x-amz-crc32)."""
    body = json.dumps(payload, default=_json_default, separators=(",", ":")).encode("utf-8")
    return status, _headers(body), body


def error_response(code: str, message: str, status: int = 400, **extra: Any) -> Response:
    """DynamoDB's JSON error shape: ``{"__type": "...#Code", "message": ...}``."""
    return response(status, {"__type": ERROR_PREFIX + code, "message": message, **extra})


def _headers(body: bytes) -> dict[str, str]:
    return {
        "content-type": JSON_CONTENT_TYPE,
        "x-amz-crc32": str(binascii.crc32(body)),
        "x-amzn-requestid": f"labkit-{next(_request_ids):012d}",
    }


def wire(item: Any) -> WireItem | None:
    """A moto ``Item`` as plain DynamoDB JSON (binary values as bytes), or None."""
    if item is None:
        return None
    return dynamo_to_dict(item.attrs)  # type: ignore[no-any-return]


def _restore(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    """Put ``item`` back at its key in moto's storage (or remove the key if it was absent)."""
    if item is None:
        if range_value is not None:
            table.items.get(hash_value, {}).pop(range_value, None)
        else:
            table.items.pop(hash_value, None)
    elif range_value is not None:
        table.items[hash_value][range_value] = item
    else:
        table.items[hash_value] = item


class _Backend:
    """moto's DynamoDBBackend with atomic multi-item writes; everything else passes through."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.reads: list[tuple[str, str | None, list[WireItem]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def update_item(self, table_name: str, key: dict[str, Any], **kwargs: Any) -> Any:
        """moto's update_item, but an update that fails half-way leaves the item as it was."""
        try:
            table = self.real.get_table(table_name)
            hash_value, range_value = self.real.get_keys_value(table, key)
            before = copy.deepcopy(table.get_item(hash_value, range_value))
        except Exception:  # let moto report a bad table or key its own way
            return self.real.update_item(table_name, key, **kwargs)
        try:
            return self.real.update_item(table_name, key, **kwargs)
        except BaseException:
            _restore(table, hash_value, range_value, before)
            raise

    def query(
        self,
        table_name: str,
        hash_key: Any,
        range_comparison: Any,
        range_values: Any,
        limit: Any,
        exclusive_start_key: Any,
        scan_index_forward: Any,
        projection_expressions: Any,
        *,
        filter_expression: str | None = None,
        expr_names: Any = None,
        expr_values: Any = None,
        index_name: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """moto's query; remembers the items read before the filter (what DynamoDB bills)."""
        items, scanned, last_key = self.real.query(
            table_name,
            hash_key,
            range_comparison,
            range_values,
            limit,
            exclusive_start_key,
            scan_index_forward,
            None,
            expr_names=expr_names,
            expr_values=expr_values,
            index_name=index_name,
            **kwargs,
        )
        return self._filter(
            table_name,
            index_name,
            items,
            scanned,
            last_key,
            filter_expression,
            expr_names,
            expr_values,
            projection_expressions,
        )

    def scan(
        self,
        table_name: str,
        filters: Any,
        limit: Any,
        exclusive_start_key: Any,
        *,
        filter_expression: str | None,
        expr_names: Any,
        expr_values: Any,
        index_name: str | None,
        projection_expression: Any,
        **kwargs: Any,
    ) -> Any:
        """moto's scan; remembers the items read before the filter."""
        items, scanned, last_key = self.real.scan(
            table_name,
            filters,
            limit,
            exclusive_start_key,
            filter_expression=None,
            expr_names=expr_names,
            expr_values=expr_values,
            index_name=index_name,
            projection_expression=None,
            **kwargs,
        )
        return self._filter(
            table_name,
            index_name,
            items,
            scanned,
            last_key,
            filter_expression,
            expr_names,
            expr_values,
            projection_expression,
        )

    def _filter(
        self,
        table_name: str,
        index_name: str | None,
        items: list[Any],
        scanned: int,
        last_key: Any,
        filter_expression: str | None,
        names: Any,
        values: Any,
        projection: Any,
    ) -> tuple[list[Any], int, Any]:
        self.reads.append((table_name, index_name, [w for w in map(wire, items) if w is not None]))
        if filter_expression:
            condition = get_filter_expression(filter_expression, names, values)
            items = [item for item in items if condition.expr(item)]
        if projection:
            items = [item.project(projection) for item in items]
        return items, scanned, last_key

    def transact_write_items(self, transact_items: list[dict[str, Any]]) -> None:
        """Check every condition first; write only if all hold; undo every write if one fails."""
        real = self.real
        if len(transact_items) > 100:
            raise TooManyTransactionsException()
        targets: set[tuple[str, Any, Any]] = set()
        plan: list[tuple[str, dict[str, Any], Any, Any, Any, Any]] = []
        reasons: list[tuple[str | None, str | None, Any]] = []
        for action in transact_items:
            if len(action) > 1:
                raise TransactWriteSingleOpException
            op_type, op = next(iter(action.items()))
            old: WireItem | None = None
            try:
                if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                    raise ValueError("Unsupported transaction operation")
                table = real.get_table(op["TableName"])
                key = op["Key"] if op_type != "Put" else _key_of(table, op["Item"])
                hash_value, range_value = real.get_keys_value(table, key)
                target = (table.name, hash_value, range_value)
                if target in targets:
                    raise MultipleTransactionsException()
                targets.add(target)
                current = table.get_item(hash_value, range_value)
                condition = op.get("ConditionExpression")
                if condition is not None:
                    check = get_filter_expression(
                        condition,
                        op.get("ExpressionAttributeNames"),
                        op.get("ExpressionAttributeValues"),
                    )
                    if not check.expr(current):
                        if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                            old = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=old)
                plan.append((op_type, op, table, hash_value, range_value, key))
                reasons.append((None, None, None))
            except (MultipleTransactionsException, MockValidationException, ResourceNotFoundException):
                raise  # DynamoDB rejects the whole request for these, with no reasons
            except ConditionalCheckFailed as exc:
                reasons.append(("ConditionalCheckFailed", str(exc.message), old))
            except Exception as exc:
                reasons.append((type(exc).__name__, str(exc), None))
        if any(code is not None for code, _, _ in reasons):
            raise TransactionCanceledException(reasons)

        saved = [(table, h, r, copy.deepcopy(table.get_item(h, r))) for _, _, table, h, r, _ in plan]
        try:
            for op_type, op, table, _, _, key in plan:
                names = op.get("ExpressionAttributeNames")
                values = op.get("ExpressionAttributeValues")
                if op_type == "Put":
                    real.put_item(table.name, op["Item"])
                elif op_type == "Delete":
                    real.delete_item(table.name, key)
                elif op_type == "Update":
                    real.update_item(
                        table.name,
                        key,
                        update_expression=op["UpdateExpression"],
                        expression_attribute_names=names,
                        expression_attribute_values=values,
                    )
        except BaseException:
            for table, h, r, item in reversed(saved):
                _restore(table, h, r, item)
            raise


def _key_of(table: Any, item: Mapping[str, Any]) -> dict[str, Any]:
    names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    for name in names:
        if name not in item:
            raise MockValidationException(
                f"One or more parameter values were invalid: Missing the key {name} in the item"
            )
    return {name: item[name] for name in names}


class _Handler(DynamoHandler):
    """moto's handler, talking to the wrapped backend."""

    core: MotoCore

    @property
    def dynamodb_backend(self) -> Any:
        return self.core.backend(self.current_account, self.region)


class MotoCore:
    """moto's DynamoDB for one endpoint. Not thread-safe: the caller holds one lock."""

    def __init__(self) -> None:
        self._backends: dict[tuple[str, str], _Backend] = {}
        self._handler: type[_Handler] = type("_BoundHandler", (_Handler,), {"core": self})

    def backend(self, account: str, region: str) -> _Backend:
        """The wrapped backend for an account and region (rewrapped if moto was reset)."""
        real = dynamodb_backends[account][region]
        wrapped = self._backends.get((account, region))
        if wrapped is None or wrapped.real is not real:
            wrapped = self._backends[(account, region)] = _Backend(real)
        return wrapped

    @staticmethod
    def who(headers: Mapping[str, str]) -> tuple[str, str] | None:
        """(account, region) of a SigV4-signed request, as moto derives them; None if unsigned."""
        match = _CREDENTIAL.search(headers.get("authorization", ""))
        if match is None:
            return None
        access_key, region = match.groups()
        account = os.environ.get("MOTO_ACCOUNT_ID") or headers.get("x-moto-account-id")
        return account or get_account_id_from(access_key), region

    def dispatch(
        self,
        operation: str,
        params: dict[str, Any] | None,
        headers: dict[str, str],
        body: bytes,
        finish: Finish | None = None,
        who: tuple[str, str] | None = None,
    ) -> Response:
        """Answer one request; the fast path when it applies, moto's full dispatch otherwise.

        ``finish`` may rewrite a successful response's payload before it is serialised;
        ``who`` is (account, region) if the caller already knows it.
        """
        method = FAST_OPERATIONS.get(operation)
        who = who or self.who(headers)
        if method is None or params is None or who is None or "content-encoding" in headers or _BINARY.search(body):
            return self.full_dispatch(headers, body, finish)
        handler = self._handler()
        handler.body = handler.params = params
        handler.uri_match = {}
        handler.current_account, handler.region = who
        try:
            result = getattr(handler, method)()
        except HTTPException as exc:  # moto's DynamoDB errors are JsonRESTError
            raw = exc.get_body()
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            return int(exc.code or 400), _headers(data), data
        except ServiceException as exc:
            return error_response(exc.code, exc.message)
        payload = result.result
        return response(200, finish(payload) if finish is not None else payload)

    def full_dispatch(self, headers: dict[str, str], body: bytes, finish: Finish | None = None) -> Response:
        """moto's own request handling (werkzeug Request, botocore parser and serializer)."""
        request = Request.from_primitives("POST", "http://127.0.0.1/", headers, body)
        status, resp_headers, resp_body = self._handler.dispatch(request)
        if isinstance(resp_body, str):
            resp_body = resp_body.encode("utf-8")
        if finish is not None and int(status) == 200:
            return response(200, finish(json.loads(resp_body or b"{}")))
        # the HTTP server writes its own date and server headers
        skip = {"date", "server", "status"}
        kept = {k: str(v) for k, v in resp_headers.items() if k.lower() not in skip}
        return int(status), kept, resp_body

    def item(self, who: tuple[str, str], table_name: str, key: Mapping[str, Any]) -> WireItem | None:
        """The stored item at ``key`` (None if absent, or if the table or key is not valid)."""
        try:
            real = dynamodb_backends[who[0]][who[1]]
            table = real.get_table(table_name)
            return wire(table.get_item(*real.get_keys_value(table, dict(key))))
        except Exception:
            return None

    def table(self, who: tuple[str, str], table_name: str) -> Any:
        """moto's Table object, or None."""
        try:
            return dynamodb_backends[who[0]][who[1]].get_table(table_name)
        except Exception:
            return None

    def key_of(self, who: tuple[str, str], table_name: str, item: Mapping[str, Any]) -> dict[str, Any]:
        """The primary key of ``item`` in ``table_name`` (empty if it cannot be found)."""
        table = self.table(who, table_name)
        try:
            return _key_of(table, item) if table is not None else {}
        except MockValidationException:
            return {}

    def take_reads(self, who: tuple[str, str]) -> list[tuple[str, str | None, list[WireItem]]]:
        """The items Query/Scan read (before filtering) since the last call."""
        wrapped = self.backend(*who)
        reads, wrapped.reads = wrapped.reads, []
        return reads
