"""Apply a validated request to moto's DynamoDB, atomically. The ONLY module that imports moto.

Runs under the engine's lock. :meth:`MotoStore.apply` calls moto's ``DynamoHandler`` methods on
the decoded JSON (skipping moto's ~1.4 ms of generic parsing); binary values, control-plane
operations and Streams go through moto's full dispatch. Both use :class:`_Backend`: transactions
check every condition before writing and restore what they wrote if a write fails; a failed
UpdateItem leaves its item as it was. What a request touched is reported as plain data.

When a MotoStore is created, :func:`_prepare_moto` checks moto's internals (else one-line
:class:`~labkit.errors.ConfigurationError`) and changes three: moto's registry of every model
instance (the leak: 3 items per UpdateItem, forever) is off for DynamoDB's models; moto's
405,000-byte item cap is lifted (validate checks DynamoDB's 409,600); TransactGetItems takes 100.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..compat import INSTALL_MOTO
from ..errors import ConfigurationError
from .decode import STREAMS, Request
from .encode import ClientFault, Response, cancelled, fault_response, headers_for
from .schema import TableSchema, schema_of
from .validate import Plan, check_stored_item

WireItem = dict[str, Any]

try:
    import moto
    import moto.dynamodb.responses as _moto_responses
    from moto.core.common_models import BaseModel
    from moto.core.exceptions import JsonRESTError, ServiceException
    from moto.core.model_instances import model_data
    from moto.core.request import Request as MotoRequest
    from moto.core.utils import camelcase_to_underscores
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import dynamo_to_dict
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.iam.models import get_account_id_from
except ImportError as _exc:  # pragma: no cover - depends on the installed moto
    raise ConfigurationError(
        f"labkit's embedded endpoint cannot use the installed moto ({_exc}); {INSTALL_MOTO}"
    ) from _exc

DEFAULT_ACCOUNT = "123456789012"

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
_BINARY = re.compile(rb'"BS?"\s*:')
_prepared = False


def _prepare_moto() -> None:
    """Check moto's internals this module relies on; switch off the leak and the wrong limits. Once."""
    global _prepared
    if _prepared:
        return
    expected = [
        (BaseModel, "__new__"),
        (Item, "__init__"),
        (LimitedSizeDict, "__setitem__"),
        (_moto_responses, "TRANSACTION_MAX_ITEMS"),
        *((DynamoHandler, method) for method in FAST_OPERATIONS.values()),
        (DynamoHandler, "dispatch"),
        (DynamoDBStreamsHandler, "dispatch"),
    ]
    missing = [f"{getattr(owner, '__name__', owner)}.{name}" for owner, name in expected if not hasattr(owner, name)]
    if missing or "dynamodb" not in model_data:
        raise ConfigurationError(
            f"labkit's embedded endpoint does not support moto {moto.__version__}: it lacks {', '.join(missing)}; "
            + INSTALL_MOTO
        )
    for service in ("dynamodb", "dynamodbstreams"):
        for cls in model_data.get(service, {}).values():
            cls.__new__ = _untracked  # type: ignore[method-assign]
            cls.instances_tracked = []  # type: ignore[attr-defined]
    LimitedSizeDict.__setitem__ = dict.__setitem__  # type: ignore[method-assign]
    _moto_responses.TRANSACTION_MAX_ITEMS = 100
    _prepared = True


def _new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


_untracked = staticmethod(_new)


def wire(item: Any) -> WireItem | None:
    """A moto ``Item`` as plain DynamoDB JSON (binary values as bytes), or None."""
    return None if item is None else dynamo_to_dict(item.attrs)


def _fault(exc: JsonRESTError | ServiceException) -> ClientFault:
    """moto's error as a ClientFault with the same code, message and extra fields."""
    if isinstance(exc, ServiceException):
        return ClientFault(exc.code, exc.message)
    raw = exc.get_body()
    return _fault_from_body(int(exc.code or 400), raw.encode("utf-8") if isinstance(raw, str) else raw)


def _fault_from_body(status: int, body: bytes) -> ClientFault:
    data = json.loads(body or b"{}")
    code = str(data.pop("__type", "ValidationException")).rpartition("#")[2]
    message = str(data.pop("message", data.pop("Message", "")))
    return ClientFault(code, message, status, data)


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

    def __init__(self, store: MotoStore, real: Any, who: tuple[str, str]) -> None:
        self.store = store
        self.real = real
        self.who = who
        self.track = False
        self.reads: list[tuple[str, str | None, list[WireItem]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def _post_check(self, table: Any, hash_value: Any, range_value: Any) -> None:
        schema = self.store.schema(*self.who, table.name)
        after = wire(table.get_item(hash_value, range_value))
        if schema is not None and after is not None:
            check_stored_item(schema, after, updated=True)

    def update_item(self, table_name: str, key: dict[str, Any], **kwargs: Any) -> Any:
        """moto's update_item, but an update that fails (or makes a bad item) leaves the item as it was."""
        table = self.real.get_table(table_name)
        hash_value, range_value = self.real.get_keys_value(table, key)
        current = table.get_item(hash_value, range_value)
        before = copy.deepcopy(current)  # moto updates the stored item in place
        try:
            result = self.real.update_item(table_name, key, **kwargs)
            self._post_check(table, hash_value, range_value)
            return result
        except BaseException:
            _restore(table, hash_value, range_value, before)
            raise

    def query(self, table_name: str, *args: Any, **kwargs: Any) -> Any:
        """moto's query (called as moto's handler calls it); remembers the items read before the filter."""
        kw = {**kwargs, "filter_expression": None}
        if len(args) > 6:  # moto's handler passes the projection 8th; it is applied after the filter, below
            projection, args = args[6], (*args[:6], None, *args[7:])
        else:
            projection = kw.pop("projection_expressions", None)
        items, scanned, last_key = self.real.query(table_name, *args, **kw)
        return self._filter(table_name, items, scanned, last_key, kwargs, projection)

    def scan(self, table_name: str, *args: Any, **kwargs: Any) -> Any:
        """moto's scan (called as moto's handler calls it); remembers the items read before the filter."""
        kw = {**kwargs, "filter_expression": None, "projection_expression": None}
        items, scanned, last_key = self.real.scan(table_name, *args, **kw)
        return self._filter(table_name, items, scanned, last_key, kwargs, kwargs.get("projection_expression"))

    def _filter(
        self, table_name: str, items: list[Any], scanned: int, last_key: Any, kwargs: dict[str, Any], projection: Any
    ) -> tuple[list[Any], int, Any]:
        if self.track:
            reads = [w for w in map(wire, items) if w is not None]
            self.reads.append((table_name, kwargs.get("index_name"), reads))
        if kwargs.get("filter_expression"):
            condition = get_filter_expression(
                kwargs["filter_expression"], kwargs.get("expr_names"), kwargs.get("expr_values")
            )
            items = [item for item in items if condition.expr(item)]
        if projection:
            items = [item.project(projection) for item in items]
        return items, scanned, last_key

    def transact_write_items(self, transact_items: list[dict[str, Any]]) -> None:
        """Check every condition first; write only if all hold; undo every write if one fails.

        The request was validated in full (one action per element, keys of the right types, no
        two actions on one item), so a check here fails only by its condition.
        """
        real = self.real
        plan: list[tuple[str, dict[str, Any], Any, Any, Any, dict[str, Any]]] = []
        reasons: list[tuple[str | None, str | None, Any]] = []
        for action in transact_items:
            ((op_type, op),) = ((k, v) for k, v in action.items() if v is not None)
            table = real.get_table(op["TableName"])
            key = op["Key"] if op_type != "Put" else {k: op["Item"][k] for k in self.store.key_names(table)}
            hash_value, range_value = real.get_keys_value(table, key)
            current = table.get_item(hash_value, range_value)
            condition = op.get("ConditionExpression")
            reason: tuple[str | None, str | None, Any] = (None, None, None)
            if condition is not None:
                check = get_filter_expression(
                    condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
                )
                if not check.expr(current):
                    old = None
                    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        old = current.to_json()["Attributes"]
                    reason = ("ConditionalCheckFailed", "The conditional request failed", old)
            reasons.append(reason)
            plan.append((op_type, op, table, hash_value, range_value, key))
        if any(code is not None for code, _, _ in reasons):
            raise cancelled(reasons)

        saved = [(table, h, r, copy.deepcopy(table.get_item(h, r))) for _, _, table, h, r, _ in plan]
        done = 0
        try:
            for op_type, op, table, h, r, key in plan:
                if op_type == "Put":
                    real.put_item(table.name, op["Item"])
                elif op_type == "Delete":
                    real.delete_item(table.name, key)
                elif op_type == "Update":
                    real.update_item(
                        table.name,
                        key,
                        update_expression=op["UpdateExpression"],
                        expression_attribute_names=op.get("ExpressionAttributeNames"),
                        expression_attribute_values=op.get("ExpressionAttributeValues"),
                    )
                    self._post_check(table, h, r)
                done += 1
        except (JsonRESTError, ClientFault) as exc:
            for table, h, r, item in reversed(saved):
                _restore(table, h, r, item)
            fault = _fault(exc) if isinstance(exc, JsonRESTError) else exc
            failed: list[tuple[str | None, str | None, Any]] = [(None, None, None)] * len(plan)
            failed[done] = (fault.code, fault.message, None)
            raise cancelled(failed) from exc
        except BaseException:
            for table, h, r, item in reversed(saved):
                _restore(table, h, r, item)
            raise


class _Handler(DynamoHandler):
    """moto's handler, talking to the wrapped backend."""

    store: MotoStore

    @property
    def dynamodb_backend(self) -> Any:
        return self.store.backend(self.current_account, self.region)


@dataclass
class Applied:
    """A successful request's answer, and what it touched, as plain data."""

    payload: dict[str, Any]
    before: list[WireItem | None] = field(default_factory=list)  # per plan.writes, before the request
    after: list[WireItem | None] = field(default_factory=list)  # per plan.writes, after it
    gets: list[WireItem | None] = field(default_factory=list)  # per plan.gets
    scanned: list[tuple[str, str | None, list[WireItem]]] = field(default_factory=list)  # Query/Scan, pre-filter


class MotoStore:
    """moto's DynamoDB for one endpoint. Not thread-safe: the engine holds one lock around every call."""

    def __init__(self) -> None:
        _prepare_moto()
        self._backends: dict[tuple[str, str], _Backend] = {}
        self._reals: dict[tuple[str, str], Any] = {}  # moto's backends, looked up once per request
        self._schemas: dict[int, tuple[Any, tuple[int, int, int], TableSchema]] = {}
        self._accounts: dict[str, str] = {}
        self._handler: type[_Handler] = type("_BoundHandler", (_Handler,), {"store": self})

    def begin(self) -> None:
        """A new request: look moto's backends up afresh (moto may have been reset meanwhile)."""
        self._reals.clear()

    def _real(self, account: str, region: str) -> Any:
        real = self._reals.get((account, region))
        if real is None:
            real = self._reals[(account, region)] = dynamodb_backends[account][region]
        return real

    # plain-data views ---------------------------------------------------------------------------
    def account_of(self, access_key: str | None) -> str:
        """The account moto derives from an access key (remembered: moto's lookup scans IAM)."""
        if not access_key:
            return DEFAULT_ACCOUNT
        account = self._accounts.get(access_key)
        if account is None:
            if len(self._accounts) > 1000:
                self._accounts.clear()
            account = self._accounts[access_key] = str(get_account_id_from(access_key))
        return account

    def backend(self, account: str, region: str) -> _Backend:
        """The wrapped backend for an account and region (rewrapped if moto was reset)."""
        real = self._real(account, region)
        wrapped = self._backends.get((account, region))
        if wrapped is None or wrapped.real is not real:
            wrapped = self._backends[(account, region)] = _Backend(self, real, (account, region))
        return wrapped

    def _table(self, account: str, region: str, table: str) -> Any:
        return self._real(account, region).tables.get(table)

    @staticmethod
    def key_names(table: Any) -> list[str]:
        return [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])

    def schema(self, account: str, region: str, table_name: str) -> TableSchema | None:
        """The table's keys and indexes, or None if it does not exist (cached until the table changes)."""
        table = self._table(account, region, table_name)
        if table is None:
            return None
        shape = (len(table.attr), len(table.global_indexes or ()), len(table.indexes or ()))
        cached = self._schemas.get(id(table))
        if cached is not None and cached[0] is table and cached[1] == shape:
            return cached[2]
        schema = schema_of(table)
        self._schemas[id(table)] = (table, shape, schema)
        return schema

    def tags(self, account: str, region: str, table_name: str) -> dict[str, str]:
        table = self._table(account, region, table_name)
        return {} if table is None else {t["Key"]: t["Value"] for t in table.tags or []}

    def capacity(self, account: str, region: str, table_name: str) -> tuple[str, tuple[float, float] | None] | None:
        """(table ARN, (RCU, WCU) if PROVISIONED else None); None if the table does not exist."""
        table = self._table(account, region, table_name)
        if table is None:
            return None
        units = table.throughput or {} if getattr(table, "billing_mode", None) == "PROVISIONED" else None
        rcu_wcu = (
            None
            if units is None
            else (float(units.get("ReadCapacityUnits", 0)), float(units.get("WriteCapacityUnits", 0)))
        )
        return str(table.table_arn), rcu_wcu

    def item(self, account: str, region: str, table_name: str, key: Mapping[str, Any]) -> WireItem | None:
        """The stored item at a validated ``key`` (None if absent or the table is gone)."""
        real = self._real(account, region)
        table = real.tables.get(table_name)
        if table is None:
            return None
        return wire(table.get_item(*real.get_keys_value(table, dict(key))))

    # applying -----------------------------------------------------------------------------------
    def apply(self, request: Request, plan: Plan, track: bool) -> Applied:
        """Apply a validated data-plane request; ``track``: report the items it touched."""
        who = (request.account, request.region)
        wrapped = self.backend(*who)
        writes = [(t.table, t.key) for t in plan.writes]
        before = [self.item(*who, t, k) for t, k in writes] if track else []
        wrapped.track, wrapped.reads = track, []
        try:
            payload = self._call(request)
        finally:
            wrapped.track = False
        applied = Applied(payload, before)
        if track:
            applied.after = [self.item(*who, t, k) for t, k in writes]
            applied.gets = [self.item(*who, t, k) for t, k, _, _ in plan.gets]
            applied.scanned, wrapped.reads = wrapped.reads, []
        return applied

    def _call(self, request: Request) -> dict[str, Any]:
        method = FAST_OPERATIONS.get(request.operation)
        if method is None or "content-encoding" in request.headers or _BINARY.search(request.body):
            status, _, body = self.dispatch(request)
            if status != 200:
                raise _fault_from_body(status, body)
            payload: dict[str, Any] = json.loads(body or b"{}")
            return payload
        handler = self._handler()
        handler.body = handler.params = request.params
        handler.uri_match = {}
        handler.current_account, handler.region = request.account, request.region
        try:
            result = getattr(handler, method)()
        except (JsonRESTError, ServiceException) as exc:
            raise _fault(exc) from exc
        return result.result  # type: ignore[no-any-return]

    def dispatch(self, request: Request) -> Response:
        """moto's own request handling (werkzeug Request, botocore parser and serializer)."""
        handler: Any = DynamoDBStreamsHandler if request.service == STREAMS else self._handler
        if not hasattr(handler(), camelcase_to_underscores(request.operation)):
            raise ClientFault(
                "UnknownOperationException",
                f"labkit's embedded endpoint does not implement {request.operation} (moto does not); "
                "use DynamoDB Local or real DynamoDB for it",
            )
        moto_request = MotoRequest.from_primitives("POST", "http://127.0.0.1/", dict(request.headers), request.body)
        try:
            status, _, body = handler.dispatch(moto_request)
        except ClientFault as fault:  # raised by _Backend inside moto's dispatch
            return fault_response(fault)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            if request.operation in FAST_OPERATIONS:
                raise  # data-plane requests were validated in full: this is an engine bug
            # Control-plane requests are checked only against botocore's model; what moto still
            # cannot read is the client's malformed request. Said, and logged, not hidden.
            print(f"labkit endpoint: moto could not read a {request.operation} request:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            raise ClientFault(
                "ValidationException",
                f"labkit's embedded endpoint (moto) could not read this {request.operation} request "
                f"({type(exc).__name__}: {exc}); check it against the DynamoDB API reference",
            ) from exc
        data = body.encode("utf-8") if isinstance(body, str) else body
        return int(status), headers_for(data), data


__all__ = ["Applied", "FAST_OPERATIONS", "MotoStore", "wire"]
